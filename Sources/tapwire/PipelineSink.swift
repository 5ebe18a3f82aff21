import ExchangeLog
import HTTP1
import ProxyEngine

/// Hands the engine's finished exchanges to the record pipeline.
final class PipelineSink: ExchangeSink {
    init(pipeline: ExchangePipeline) { self.pipeline = pipeline }
    let pipeline: ExchangePipeline
    func accept(_ event: consuming CapturedEvent) { pipeline.accept(event) }
    var isBehind: Bool { pipeline.isBehind }
    func onCaughtUp(_ handler: @escaping @Sendable () -> Void) { pipeline.onCaughtUp(handler) }
}
