import Foundation
import XCTest

/// A burst's memory goes back to the system once Tapwire has been quiet for a while
/// (`IdleHeapTrim`): a daemon must not keep the peak of its busiest minute forever.
final class MemoryEndToEndTests: XCTestCase {
    func testMemoryGoesBackAfterABurst() throws {
        let origin = try OriginServer()
        let proxy = try TapwireProcess()
        XCTAssertEqual(postJSONBurst(port: proxy.port, url: "\(origin.base)/echo", clients: 1, perClient: 1), 0)
        let baseline = proxy.rssBytes
        // 1,600 exchanges of 64 KiB each way. Blocks this size come from malloc's arenas
        // (larger ones are mapped and unmapped on their own), where freed memory stays.
        let (failures, growth) = proxy.measuringRSSGrowth {
            postJSONBurst(port: proxy.port, url: "\(origin.base)/echo", clients: 8, perClient: 200, bodyBytes: 64 << 10)
        }
        XCTAssertEqual(failures, 0)
        XCTAssertGreaterThan(growth, 48 << 20, "the burst did not grow memory, so the test shows nothing")
        // Two trim periods (5 s each) and some slack for a loaded machine.
        var rss = proxy.rssBytes
        eventually(timeout: 25, every: 0.25) {
            rss = proxy.rssBytes
            return rss <= baseline + (32 << 20)
        }
        XCTAssertLessThanOrEqual(rss, baseline + (32 << 20),
                                 "RSS \(rss >> 20) MiB after the burst, \(baseline >> 20) MiB before, peak +\(growth >> 20) MiB")
    }
}
