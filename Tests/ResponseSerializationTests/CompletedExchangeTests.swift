import Foundation
import HTTP1
import XCTest
@testable import ResponseSerialization

final class CompletedExchangeTests: XCTestCase {
    private let deliveryKey = DispatchSpecificKey<String>()

    private func deliveryQueue(_ name: String) -> DispatchQueue {
        let queue = DispatchQueue(label: name)
        queue.setSpecific(key: deliveryKey, value: name)
        return queue
    }

    func testHandlersRunInAttachOrderOnTheGivenQueue() {
        let queue = deliveryQueue("delivery")
        let exchange = exchange(response: httpResponse(200, contentType: "application/json"), data: bytes("{\"n\":1}"))
        let done = expectation(description: "all handlers")
        done.expectedFulfillmentCount = 5
        var order: [String] = []
        var queues: [String?] = []
        let record: (String) -> Void = { name in
            order.append(name)
            queues.append(DispatchQueue.getSpecific(key: self.deliveryKey))
            done.fulfill()
        }
        exchange
            .response(queue: queue) { _ in record("default") }
            .responseData(queue: queue) { _ in record("data") }
            .responseString(queue: queue) { _ in record("string") }
            .responseJSON(queue: queue) { _ in record("json") }
            .response(queue: queue, responseSerializer: DataResponseSerializer<Int>.custom { _, _, data in data?.count ?? 0 }) { _ in
                record("custom")
            }
        wait(for: [done], timeout: 10)
        queue.sync {
            XCTAssertEqual(order, ["default", "data", "string", "json", "custom"])
            XCTAssertEqual(queues, Array(repeating: "delivery", count: 5))
        }
    }

    func testAsyncResponsesCarryValuesAndTimeline() {
        let queue = deliveryQueue("values")
        let exchange = exchange(response: httpResponse(200), data: bytes("{\"n\":1}"))
        let done = expectation(description: "json")
        var received: DataResponse<JSON>?
        exchange.responseJSON(queue: queue) { received = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        queue.sync {
            XCTAssertEqual(received?.value, .object([JSON.Member("n", .number("1"))]))
            XCTAssertEqual(received?.timeline.requestStartTime, 1000)
            XCTAssertEqual(received?.timeline.initialResponseTime, 1000.25)
            XCTAssertEqual(received?.timeline.requestCompletedTime, 1000.5)
            XCTAssertGreaterThanOrEqual(received?.timeline.serializationCompletedTime ?? 0, 1000.5)
        }
    }

    func testPropertyListHandler() throws {
        let queue = deliveryQueue("plist")
        let plist = try PropertyListSerialization.data(fromPropertyList: ["k": "v"], format: .binary, options: 0)
        let done = expectation(description: "plist")
        var received: DataResponse<JSON>?
        exchange(data: plist).responsePropertyList(queue: queue) { received = $0; done.fulfill() }
        wait(for: [done], timeout: 10)
        queue.sync { XCTAssertEqual(received?.value, .object([JSON.Member("k", .string("v"))])) }
    }

    func testSerializationCompletedTimeIsStampedFromTheClockAfterTheSerializer() {
        let clock = ManualClock(now: 2000)
        let exchange = CompletedExchange(request: getRequest(), response: httpResponse(200), data: bytes("x"),
                                         requestStartTime: 1990, initialResponseTime: 1995, requestCompletedTime: 1999,
                                         clock: { clock.now })
        let slow = DataResponseSerializer<String>.custom { _, _, _ in clock.now = 2003; return "done" }
        let response = exchange.serialize(with: slow)
        XCTAssertEqual(response.timeline.serializationCompletedTime, 2003)
        XCTAssertEqual(response.timeline.serializationDuration, 4)
        XCTAssertEqual(response.timeline.totalDuration, 13)
    }

    func testSerializationCompletedTimeNeverPrecedesRequestCompletion() {
        let exchange = CompletedExchange(request: getRequest(), response: httpResponse(200), data: bytes("x"),
                                         requestStartTime: 10, requestCompletedTime: 20, clock: { 5 })
        let response = exchange.serialize(with: .data())
        XCTAssertEqual(response.timeline.serializationCompletedTime, 20)
        XCTAssertEqual(response.timeline.initialResponseTime, 20)
        XCTAssertGreaterThanOrEqual(exchange.defaultResponse().timeline.serializationDuration, 0)
    }

    func testDefaultResponseCarriesEverything() {
        let metrics = ExchangeMetrics(connect: 0.001, connectionReused: true, upstream: "127.0.0.1:9")
        let exchange = CompletedExchange(request: getRequest(), response: httpResponse(404), data: bytes("nope"),
                                         requestStartTime: 1, requestCompletedTime: 2, metrics: metrics)
            .validate()
        let response = exchange.defaultResponse()
        XCTAssertEqual(response.request?.method, "GET")
        XCTAssertEqual(response.response?.status, 404)
        XCTAssertEqual(response.data, bytes("nope"))
        XCTAssertEqual(response.metrics, metrics)
        XCTAssertEqual((response.error as? TapwireError)?.reasonName, "unacceptableStatusCode")
    }

    func testTransportFailureReachesSerializersAndSkipsValidators() {
        let failure = TapwireError.transportFailed(TransportFailure(code: .upstreamConnectFailed, message: "connection refused"))
        var validatorRan = false
        let exchange = CompletedExchange(request: getRequest(), response: nil, data: nil, error: failure,
                                         requestStartTime: 1, requestCompletedTime: 2)
            .validate { _, _, _ in validatorRan = true; return .success }
        XCTAssertFalse(validatorRan)
        let response = exchange.serialize(with: .json())
        XCTAssertNil(response.response)
        XCTAssertEqual((response.error as? TapwireError)?.reasonName, "upstreamConnectFailed")
    }

    func testValidationFailureIsHandedToSerializers() {
        let exchange = exchange(response: httpResponse(500, contentType: "application/json"), data: bytes("{}"))
            .validate(statusCode: 200..<300)
        let response = exchange.serialize(with: .json())
        guard case .unacceptableStatusCode(let code)? = validationReason(response.error) else { return XCTFail() }
        XCTAssertEqual(code, 500)
    }

    func testHandlerSeesOnlyValidatorsAttachedBeforeIt() {
        let queue = deliveryQueue("attach")
        let exchange = exchange(response: httpResponse(500), data: bytes("x"))
        let done = expectation(description: "both")
        done.expectedFulfillmentCount = 2
        var before: Error?, after: Error?
        exchange.response(queue: queue) { before = $0.error; done.fulfill() }
        exchange.validate(statusCode: [200])
        exchange.response(queue: queue) { after = $0.error; done.fulfill() }
        wait(for: [done], timeout: 10)
        queue.sync {
            XCTAssertNil(before)
            XCTAssertEqual((after as? TapwireError)?.reasonName, "unacceptableStatusCode")
        }
    }
}

final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var value: TimeInterval
    init(now: TimeInterval) { value = now }
    var now: TimeInterval {
        get { lock.lock(); defer { lock.unlock() }; return value }
        set { lock.lock(); value = newValue; lock.unlock() }
    }
}
