import Configuration
import ExchangeLog
import Foundation
import HTTP1
import ProxyEngine
import Synchronization
import Systemd
import TLSInterception
import Viewer

/// `tapwire run`: starts the log writer, the record pipeline and the engine in
/// that order, answers signals, and stops them in reverse order so every
/// accepted record is on disk before the process exits.
final class ProxyService: @unchecked Sendable {
    private let configPath: String?
    private let flags: (listen: String?, logDirectory: String?, replayFrom: String?)
    private let current: Mutex<TapwireConfiguration>
    /// What the engine started with: settings that change only at a restart keep these values.
    private let started: TapwireConfiguration
    private let notifier = SystemdNotifier()
    /// TLS for an `https` parent, made once, from the `tls` keys of the start (they apply
    /// only at a restart).
    private let sharedParentTLS = Mutex<ParentTLS?>(nil)

    /// The parent TLS `config` needs: nil unless its parent is https (or interception made one).
    private func parentTLS(for config: TapwireConfiguration) throws -> ParentTLS? {
        try sharedParentTLS.withLock { tls in
            if tls == nil && config.parentProxy.parent?.kind == .https {
                tls = ParentTLS(context: try UpstreamTLSContext(upstreamCAFile: started.tls.upstreamCAFile,
                                                                insecure: started.tls.insecureUpstream))
            }
            return tls
        }
    }
    /// Offline replay's answers, read again at each reload.
    private var replays = ReplaySources()

    init(configuration: TapwireConfiguration, configPath: String?, listenFlag: String?, logDirectoryFlag: String?,
         replayFromFlag: String? = nil) {
        self.current = Mutex(configuration)
        self.started = configuration
        self.configPath = configPath
        self.flags = (listenFlag, logDirectoryFlag, replayFromFlag)
    }

    static func log(_ message: String) {
        FileHandle.standardError.write(Data("tapwire: \(message)\n".utf8))
    }

    static func processor(for c: TapwireConfiguration) -> ExchangeProcessor {
        ExchangeProcessor(settings: ProcessorSettings(rules: c.rules, redactHeaders: Set(c.redactHeaders),
                                                      redactJSONKeys: Set(c.redactJSONKeys), decodeLimit: c.maxDecodedBytes,
                                                      messageKeepBytes: c.engine.captureMaxBodyBytes))
    }

    func run() -> Int32 {
        // SIGHUP's and SIGUSR1's default action ends the process, and logrotate may send
        // either at any moment: ignored until the first loop installs their handlers (one
        // arriving in between is lost, not fatal).
        signal(SIGHUP, SIG_IGN)
        signal(SIGUSR1, SIG_IGN)
        // Before any thread starts: unsetenv racing another thread's getenv is a data race.
        let inheritedListeners = SocketActivation.listenFDs(unsetEnvironment: true)
        let config = current.withLock { $0 }
        let writer: LogWriter
        do {
            writer = try LogWriter(settings: config.log, dormant: !config.logEnabled)
        } catch {
            Self.log("cannot write logs in \(config.log.resolvedDirectory): \(error)")
            return 1
        }
        let pipeline = ExchangePipeline(processor: Self.processor(for: config), writer: writer,
                                        maxPending: config.log.decodeQueueCapacity,
                                        maxPendingBytes: config.log.decodeQueueBytes, whenBehind: config.log.whenBehind)
        var engineConfig = config.engine
        engineConfig.inheritedListeners = inheritedListeners
        // With nothing decoded there is nothing for the loops to yield to.
        if !config.logEnabled { engineConfig.loopNice = 0 }
        var interception: HTTPSInterception?
        do {
            // Offline replay answers HTTP/1.1 requests: while it runs, intercepted clients are
            // held to HTTP/1.1 (as tls.http2: false does), or their HTTP/2 streams would go
            // to the network unanswered by it.
            var tls = config.tls
            if config.replaysAnything { tls.http2 = false }
            if let (i, ca) = try HTTPSInterception.make(tls, originTLS: config.needsOriginTLS) {
                interception = i
                if let ca { Self.log("HTTPS interception for \(config.tls.intercept.joined(separator: ", "))"
                         + (config.tls.ignore.isEmpty ? "" : " except \(config.tls.ignore.joined(separator: ", "))")
                         + "; CA \(ca.subjectName) (\(ca.certificatePath)\(ca.wasCreated ? ", created now" : ""))") }
                if config.tls.insecureUpstream {
                    Self.log("WARNING: tls.insecureUpstream is true: origin certificates are NOT verified. Use it for test origins only.")
                }
            }
        } catch {
            Self.log("cannot set up HTTPS interception: \(error)")
            writer.flushAndStop()
            return 1
        }
        // The interception's origin trust serves an https parent too; without interception
        // it is made for an https parent only (loading the system trust store costs time
        // and memory), at start or at the reload that brings one.
        if let interception { sharedParentTLS.withLock { $0 = ParentTLS(context: interception.upstream) } }
        let parentTLS: ParentTLS?
        do { parentTLS = try self.parentTLS(for: config) } catch {
            Self.log("upstream.proxy is an https parent, but TLS with it cannot be set up: \(error)")
            writer.flushAndStop()
            return 1
        }
        if let parent = config.parentProxy.parent {
            Self.log("upstream connections go through the parent proxy \(parent.via)"
                     + (parent.credentials == nil ? "" : " with credentials")
                     + (config.parentProxy.noProxy.isEmpty ? "" : ", except to \(config.parentProxy.noProxy.joined(separator: ", "))"))
        }
        let engine = ProxyEngine(configuration: engineConfig, sink: config.logEnabled ? PipelineSink(pipeline: pipeline) : nil,
                                 tlsInterceptor: interception,
                                 blindTunnels: BlindTunnelHosts(tlsIgnore: config.tls.ignore, blindTunnels: config.blindTunnels),
                                 routing: config.parentProxy.routing(parentTLS: parentTLS))
        do {
            replays = try ReplaySources.make(config)
        } catch {
            Self.log("cannot read recorded responses: \(error)")
            writer.flushAndStop()
            return 1
        }
        engine.replayResponders = replays.responders
        engine.additionalMetrics = { Self.metricsText(writer: writer, pipeline: pipeline) }
        let viewer = ViewerCLI.forRun(config: config)
        if let viewer { engine.viewer = { viewer.serve($0) } }
        do {
            try engine.start()
        } catch {
            Self.log("\(error)")
            writer.flushAndStop()
            return 1
        }
        if let viewer, let address = engine.boundAddresses.first {
            viewer.bind(to: address)
            Self.log("viewer on \(ViewerCLI.url(address))")
        }
        installSignalHandlers(engine: engine, pipeline: pipeline, writer: writer)
        // Installed, not only queued: whoever waits for the line below (a test, a script,
        // systemd via READY=1) may signal at once.
        engine.waitForLoops()
        for a in engine.boundAddresses { print("listening on \(a)") }
        if !inheritedListeners.isEmpty {
            // Socket activation: the socket unit's ListenStream= decides, and a `listen` that
            // names another address would otherwise be ignored without a word.
            let unused = engineConfig.listen.filter { text in
                SocketAddress(parsing: text).map { !engine.boundAddresses.contains($0) } ?? true
            }
            if !unused.isEmpty {
                Self.log("listen \(unused.joined(separator: ", ")) is not bound: systemd passed the listening socket(s) "
                         + "\(engine.boundAddresses.map(\.description).joined(separator: ", ")) (the socket unit's ListenStream=)")
            }
        }
        if config.logEnabled && engineConfig.loopNice > 0 {
            let steps = engineConfig.loopNice
            // Strong, not `weak`: a weak reference would give the engine a side table, and
            // every retain and release of it (from every loop, on every exchange) would take
            // the refcount's slow path. The engine lives as long as the process.
            pipeline.onFirstBacklog {
                guard let (lowered, error) = engine.lowerLoopPriority() else { return }
                if error != 0 {
                    Self.log("logging fell behind; \(lowered) event loop(s) now run \(steps) nice steps below it (log.loopNice), "
                             + "the others could not: \(String(cString: strerror(error)))")
                } else {
                    Self.log("logging fell behind: the event loops now run \(steps) nice steps below it (log.loopNice) until restart")
                }
            }
        }
        fflush(stdout)
        if config.logEnabled {
            Self.log("logging to \(config.log.resolvedDirectory)/\(config.log.fileName); \(config.rules.count) rule(s)"
                    + (config.log.whenBehind == .wait ? "; log.whenBehind is wait: clients wait when decoding falls behind, nothing is dropped" : ""))
        } else {
            Self.log("log.enabled is false: forwarding only, nothing is decoded or logged")
        }

        // A burst's captures and record buffers go back to the system once a whole period
        // passed without traffic or logging (see IdleHeapTrim).
        let heapTrim = IdleHeapTrim()
        engine.every(Self.idleTrimPeriod) {
            let m = engine.metrics
            heapTrim.tick(activity: m.exchanges.value &+ m.bytesFromClients.value &+ m.bytesFromUpstreams.value
                          &+ pipeline.processed &+ pipeline.dropped &+ writer.stats.written)
        }

        if let notifier {
            if let interval = SystemdNotifier.watchdogInterval() {
                // Pinged from the first loop, and only while every loop still ticks.
                engine.every(interval) {
                    if engine.loopsResponsive(within: interval * 2) { notifier.watchdog() }
                }
                _ = engine.loopsResponsive(within: interval * 2)
            }
            engine.every(5) { notifier.status(Self.statusLine(engine: engine, writer: writer)) }
            notifier.ready(status: Self.statusLine(engine: engine, writer: writer))
        }

        engine.waitUntilStopped()
        pipeline.drain()
        writer.flushAndStop()
        stopTicker.withLock { $0?.cancel() }
        let stats = writer.stats
        Self.log("stopped: \(stats.written) record(s) written, \(stats.lost) lost")
        return 0
    }

    /// Seconds systemd is asked to wait, past the unit's TimeoutStopSec, each time the stop
    /// has made progress.
    static let stopProgressGrace = 15.0
    private let stopTicker = Mutex<DispatchSourceTimer?>(nil)

    /// SIGTERM/SIGINT: drain, then flush. Under systemd, EXTEND_TIMEOUT_USEC asks for time
    /// beyond TimeoutStopSec (20 s) while the stop makes progress (exchanges ending, records
    /// written): the drain alone may take limits.drainTimeout, and flushing a full queue more,
    /// and a SIGKILL then would lose records already accepted. A stop that stalls (a hung
    /// disk) gets no more time.
    private func stopping(engine: ProxyEngine, pipeline: ExchangePipeline, writer: LogWriter) {
        // A second SIGTERM or SIGINT changes nothing (the engine ignores it too).
        if let notifier, stopTicker.withLock({ $0 == nil }) {
            notifier.stopping()
            // The engine's drain time: a reload does not change it (it waits for a restart).
            notifier.extendTimeout(seconds: engine.configuration.drainTimeout + Self.stopProgressGrace)
            let timer = DispatchSource.makeTimerSource(queue: .global())
            var last = -1
            timer.setEventHandler {
                let s = writer.stats
                let progress = s.written &+ s.lost &+ pipeline.processed &+ pipeline.dropped &+ engine.metrics.exchanges.value
                if progress != last { notifier.extendTimeout(seconds: Self.stopProgressGrace) }
                last = progress
            }
            timer.schedule(deadline: .now() + 5, repeating: 5)
            timer.resume()
            stopTicker.withLock { $0 = timer }
        }
        engine.shutdown()
    }

    /// Before "listening on" (see `run`).
    private func installSignalHandlers(engine: ProxyEngine, pipeline: ExchangePipeline, writer: LogWriter) {
        engine.onSignal(SIGTERM) { [self] in stopping(engine: engine, pipeline: pipeline, writer: writer) }
        engine.onSignal(SIGINT) { [self] in stopping(engine: engine, pipeline: pipeline, writer: writer) }
        engine.onSignal(SIGUSR1) {
            Self.log("SIGUSR1: reopening log files")
            writer.reopen()
        }
        // Off the loop: reading the file and opening a new log location can block on a hung
        // mount, and the first loop serves clients (and feeds the watchdog). Serial: two
        // quick SIGHUPs apply in order.
        let reloads = DispatchQueue(label: "tapwire.reload")
        engine.onSignal(SIGHUP) { [self] in
            let serving = engine.boundAddresses.map(\.description)
            reloads.async { self.reload(engine: engine, pipeline: pipeline, writer: writer, serving: serving) }
        }
    }

    /// SIGHUP: re-read the config; a bad one is refused and the old one keeps running.
    /// The log files are reopened either way: logrotate's `postrotate` reload follows a
    /// rename, whether or not the config file has a broken edit pending.
    /// - Parameter serving: the addresses the engine listens on (listeners change only at a restart).
    private func reload(engine: ProxyEngine, pipeline: ExchangePipeline, writer: LogWriter, serving: [String]) {
        notifier?.reloading()
        defer { notifier?.ready() }
        guard let path = configPath else {
            Self.log("SIGHUP: no --config file to reload; reopening log files")
            writer.reopen()
            replays.reload(log: Self.log)
            return
        }
        func refuse(_ lines: [String]) {
            Self.log("SIGHUP: refusing the new config, the old one keeps running (log files reopened):")
            for line in lines { Self.log("  \(line)") }
            writer.reopen()
        }
        switch TapwireConfiguration.load(path: path) {
        case .failure(let list):
            refuse(list.errors.map { "\(path): \($0)" })
        case .success(var fresh):
            let errors = fresh.override(listen: flags.listen, logDirectory: flags.logDirectory)
                + fresh.override(replayFrom: flags.replayFrom)
            guard errors.isEmpty else {
                refuse(errors.map { "\($0)" })
                return
            }
            // Checked whether or not the new file enables logging: log.enabled applies only at
            // a restart, so the running writer would switch to the new location either way;
            // a dormant writer (started with logging off) never writes, so there is nothing to check.
            let running = current.withLock { $0.log }
            let runningParent = current.withLock { $0.parentProxy }
            let parentTLS: ParentTLS?
            do { parentTLS = try self.parentTLS(for: fresh) } catch {
                refuse(["upstream.proxy: TLS with an https parent cannot be set up: \(error)"])
                return
            }
            if started.logEnabled && (fresh.log.resolvedDirectory != running.resolvedDirectory || fresh.log.fileName != running.fileName) {
                do { try RotatingFile.checkCanOpen(fresh.log, lockHeld: writer.holdsLock(for: fresh.log)) } catch {
                    refuse(["cannot write logs in \(fresh.log.resolvedDirectory): \(error)"])
                    return
                }
            }
            current.withLock { $0 = fresh }
            // The answers are read again from the directories that run; a changed replay
            // block waits for a restart, like the listeners it belongs to.
            replays.reload(log: Self.log)
            let restartReplay = (0..<max(fresh.engine.listen.count, started.engine.listen.count)).contains {
                fresh.replay(ofListener: $0) != started.replay(ofListener: $0)
            }
            pipeline.replace(processor: Self.processor(for: fresh))
            writer.apply(fresh.log)
            pipeline.apply(maxPending: fresh.log.decodeQueueCapacity, maxPendingBytes: fresh.log.decodeQueueBytes,
                           whenBehind: fresh.log.whenBehind)
            writer.reopen()
            if fresh.parentProxy != runningParent {
                engine.apply(routing: fresh.parentProxy.routing(parentTLS: parentTLS))
                Self.log("SIGHUP: new upstream connections go " + (fresh.parentProxy.parent.map { "through the parent proxy \($0.via)" } ?? "direct"))
            }
            // Named one by one: a reload that says "config reloaded" must not leave a narrowed
            // access.allow or a tightened tls.insecureUpstream silently unapplied. Compared with
            // what runs (the start-up values), not the previous file: a second reload still
            // says so, and a file set back to the running values says nothing.
            var restartOnly: [String] = []
            if fresh.engine.listen != started.engine.listen || fresh.engine.listenerModes != started.engine.listenerModes {
                restartOnly.append("listen")
            }
            if restartReplay { restartOnly.append("replay") }
            if fresh.engine.allow != started.engine.allow { restartOnly.append("access.allow") }
            if fresh.viewer != started.viewer { restartOnly.append("viewer") }
            var runningLimits = started.engine, newLimits = fresh.engine
            runningLimits.listen = []; newLimits.listen = []; runningLimits.listenerModes = []; newLimits.listenerModes = []
            runningLimits.allow = []; newLimits.allow = []
            if newLimits != runningLimits { restartOnly.append("limits, timeouts, capture or log.loopNice") }
            if fresh.tls != started.tls { restartOnly.append("tls") }
            if fresh.logEnabled != started.logEnabled { restartOnly.append("log.enabled") }
            if !restartOnly.isEmpty {
                Self.log("SIGHUP: these differ from the running values, which stay until a restart: \(restartOnly.joined(separator: ", "))")
            }
            // The summary names the addresses still served, not the file's new ones.
            var live = fresh
            live.engine.listen = serving
            Self.log("SIGHUP: config reloaded (\(live.summary))")
        }
    }

    /// Seconds of quiet before memory is trimmed: long enough that steady traffic with pauses
    /// does not trim (and fault the pages in again) between requests.
    static let idleTrimPeriod = 5.0

    static func statusLine(engine: ProxyEngine, writer: LogWriter) -> String {
        let m = engine.metrics
        let s = writer.stats
        let held = m.heldClients.value
        return "\(m.activeClients.value) clients\(held > 0 ? " (\(held) held: log behind)" : ""), \(m.exchanges.value) exchanges, "
            + "\(s.written) records written, \(s.lost) lost"
    }

    static func metricsText(writer: LogWriter, pipeline: ExchangePipeline) -> String {
        let s = writer.stats
        return """
        # HELP tapwire_records_written_total Records written to the log.
        # TYPE tapwire_records_written_total counter
        tapwire_records_written_total \(s.written)
        # HELP tapwire_records_lost_total Records that could not be stored (queue overflow, disk full, I/O error).
        # TYPE tapwire_records_lost_total counter
        tapwire_records_lost_total \(s.lost)
        # HELP tapwire_log_queue_depth Records waiting for the log writer.
        # TYPE tapwire_log_queue_depth gauge
        tapwire_log_queue_depth \(s.queueDepth)
        # HELP tapwire_serialization_queue_depth Exchanges waiting for or in serialization.
        # TYPE tapwire_serialization_queue_depth gauge
        tapwire_serialization_queue_depth \(pipeline.queueDepth)
        # HELP tapwire_log_rotations_total Log file rotations.
        # TYPE tapwire_log_rotations_total counter
        tapwire_log_rotations_total \(s.rotations)

        """
    }
}
