import Configuration
import Foundation
import HTTP1
import LogTools
import ProxyEngine

/// The recorded-response sources of `tapwire run` (`replay`, `--replay-from`): one responder
/// per distinct `replay` block, its answers read from its directory before the loops start
/// and again at each SIGHUP, always on the caller's thread, never on a loop.
struct ReplaySources {
    private var sources: [(settings: ReplaySettings, fileName: String, responder: ReplayResponder)] = []
    /// `listen[i]`'s responder (nil: it answers from the network).
    private var byListener: [ReplayResponder?] = []

    init() {}

    static func make(_ config: TapwireConfiguration) throws -> ReplaySources {
        var made = ReplaySources()
        for i in config.engine.listen.indices {
            guard let settings = config.replay(ofListener: i) else { made.byListener.append(nil); continue }
            if let shared = made.sources.first(where: { $0.settings == settings }) {
                made.byListener.append(shared.responder)
                continue
            }
            let built = try ReplayIndex.build(directory: settings.directory, fileName: config.log.fileName, match: settings.match)
            let responder = ReplayResponder(match: settings.match, notFound: settings.notFound, directory: settings.directory,
                                            index: built.answers)
            ProxyService.log("replay: \(built.answers.count) recorded answer(s) from \(settings.directory)"
                             + (built.unusable > 0 ? ", \(built.unusable) request(s) whose newest body was not captured whole (notFound)" : "")
                             + "; not found: \(settings.notFound.rawValue)")
            for why in built.unreadable { ProxyService.log("replay: skipped the rest of a damaged file: \(why)") }
            made.sources.append((settings, config.log.fileName, responder))
            made.byListener.append(responder)
        }
        return made
    }

    var responders: [ReplayResponder?] { byListener }

    /// Reads every directory again; one that cannot be read keeps its previous answers.
    func reload(log: (String) -> Void) {
        for source in sources {
            do {
                let built = try ReplayIndex.build(directory: source.settings.directory, fileName: source.fileName,
                                                  match: source.settings.match)
                source.responder.replace(built.answers)
                log("SIGHUP: replay: \(built.answers.count) recorded answer(s) from \(source.settings.directory)")
                for why in built.unreadable { log("SIGHUP: replay: skipped the rest of a damaged file: \(why)") }
            } catch {
                log("SIGHUP: replay: cannot read \(source.settings.directory), its previous answers stay: \(error)")
            }
        }
    }
}
