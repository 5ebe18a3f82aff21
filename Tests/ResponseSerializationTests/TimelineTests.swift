import Foundation
import XCTest
@testable import ResponseSerialization

final class TimelineTests: XCTestCase {
    func testDurationsFollowTheFormulas() {
        let timeline = Timeline(requestStartTime: 100.0, initialResponseTime: 100.012,
                                requestCompletedTime: 100.020, serializationCompletedTime: 100.021)
        XCTAssertEqual(timeline.latency, 0.012, accuracy: 1e-9)
        XCTAssertEqual(timeline.requestDuration, 0.020, accuracy: 1e-9)
        XCTAssertEqual(timeline.serializationDuration, 0.001, accuracy: 1e-9)
        XCTAssertEqual(timeline.totalDuration, 0.021, accuracy: 1e-9)
    }

    func testDescriptionMatchesAlamofire() {
        let timeline = Timeline(requestStartTime: 100.0, initialResponseTime: 100.012,
                                requestCompletedTime: 100.020, serializationCompletedTime: 100.021)
        XCTAssertEqual(timeline.description,
                       "Timeline: { \"Latency\": 0.012 secs, \"Request Duration\": 0.020 secs, \"Serialization Duration\": 0.001 secs, \"Total Duration\": 0.021 secs }")
    }

    func testInitialResponseFallsBackToCompletion() {
        let timeline = Timeline(requestStartTime: 10, initialResponseTime: 0, requestCompletedTime: 12, serializationCompletedTime: 13)
        XCTAssertEqual(timeline.initialResponseTime, 12)
        XCTAssertEqual(timeline.latency, 2)
    }

    func testDefaultsAreZero() {
        let timeline = Timeline()
        XCTAssertEqual([timeline.requestStartTime, timeline.initialResponseTime, timeline.requestCompletedTime,
                        timeline.serializationCompletedTime, timeline.latency, timeline.totalDuration], [0, 0, 0, 0, 0, 0])
        XCTAssertEqual(timeline.description,
                       "Timeline: { \"Latency\": 0.000 secs, \"Request Duration\": 0.000 secs, \"Serialization Duration\": 0.000 secs, \"Total Duration\": 0.000 secs }")
    }

    func testMetricsDefaults() {
        let metrics = ExchangeMetrics(connect: 0.5, upstream: "127.0.0.1:8080")
        XCTAssertNil(metrics.dns)
        XCTAssertEqual(metrics.connect, 0.5)
        XCTAssertFalse(metrics.connectionReused)
        XCTAssertEqual(metrics.upstream, "127.0.0.1:8080")
    }
}
