import Configuration
import Foundation
import ProxyEngine

/// `tapwire run`: starts the engine (and, once wired, the record pipeline),
/// handles signals, and stops everything in order.
final class ProxyService {
    let configuration: TapwireConfiguration
    let configPath: String?

    init(configuration: TapwireConfiguration, configPath: String?) {
        self.configuration = configuration
        self.configPath = configPath
    }

    func run() -> Int32 {
        let engine = ProxyEngine(configuration: configuration.engine, sink: nil)
        do {
            try engine.start()
        } catch {
            FileHandle.standardError.write(Data("tapwire: \(error)\n".utf8))
            return 1
        }
        for a in engine.boundAddresses { print("listening on \(a)") }
        fflush(stdout)
        engine.onSignal(SIGTERM) { engine.shutdown() }
        engine.onSignal(SIGINT) { engine.shutdown() }
        engine.waitUntilStopped()
        return 0
    }
}
