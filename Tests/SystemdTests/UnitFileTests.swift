import Foundation
import XCTest

/// The shipped units, checked the way systemd itself reads them.
final class UnitFileTests: XCTestCase {
    private var serviceURL: URL { CommandRunner.packageRoot.appendingPathComponent("systemd/tapwire.service") }
    private var socketURL: URL { CommandRunner.packageRoot.appendingPathComponent("systemd/tapwire.socket") }
    private var scratch: URL?

    override func tearDownWithError() throws {
        if let scratch { try FileManager.default.removeItem(at: scratch) }
    }

    /// `verify` also checks that ExecStart's program exists, and /usr/local/bin/tapwire
    /// is not installed where tests run; so the units are checked from a copy whose
    /// ExecStart program is /bin/true, arguments and everything else unchanged.
    func testVerifyFindsNothingToReport() throws {
        let analyze = try CommandRunner.locate("systemd-analyze", package: "systemd")
        let directory = try CommandRunner.temporaryDirectory()
        scratch = directory
        let service = try String(contentsOf: serviceURL, encoding: .utf8)
        let installed = "ExecStart=/usr/local/bin/tapwire "
        XCTAssertTrue(service.contains("\n" + installed), "ExecStart no longer starts with \(installed)")
        try service.replacingOccurrences(of: installed, with: "ExecStart=/bin/true ")
            .write(to: directory.appendingPathComponent("tapwire.service"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(at: socketURL, to: directory.appendingPathComponent("tapwire.socket"))

        let outcome = try CommandRunner.run(analyze, ["verify", "--man=no",
                                                      directory.appendingPathComponent("tapwire.service").path,
                                                      directory.appendingPathComponent("tapwire.socket").path])

        XCTAssertEqual(outcome.status, 0, outcome.output)
        XCTAssertEqual(outcome.output, "", "systemd-analyze verify reported problems")
    }

    /// systemd 252 takes --threshold on its internal 0–100 scale (a whole number,
    /// ten times the printed figure): 25 means exposure 2.5.
    func testSecurityExposureAtMostTwoPointFive() throws {
        let analyze = try CommandRunner.locate("systemd-analyze", package: "systemd")

        let outcome = try CommandRunner.run(analyze, ["security", "--offline=yes", "--threshold=25", serviceURL.path])

        XCTAssertEqual(outcome.status, 0, outcome.output)
        let exposure = try XCTUnwrap(Self.overallExposure(in: outcome.output), "no overall exposure in:\n\(outcome.output)")
        XCTAssertLessThanOrEqual(exposure, 2.5, outcome.output)
    }

    func testSecurityThresholdRejectsAWeakerUnit() throws {
        let analyze = try CommandRunner.locate("systemd-analyze", package: "systemd")
        let directory = try CommandRunner.temporaryDirectory()
        scratch = directory
        let weak = directory.appendingPathComponent("tapwire.service")
        try "[Service]\nExecStart=/bin/true\n".write(to: weak, atomically: true, encoding: .utf8)

        let outcome = try CommandRunner.run(analyze, ["security", "--offline=yes", "--threshold=25", weak.path])

        XCTAssertNotEqual(outcome.status, 0, "an unhardened unit should fail the same check")
        XCTAssertGreaterThan(try XCTUnwrap(Self.overallExposure(in: outcome.output)), 2.5)
    }

    /// What the tapwire executable relies on: how it is started, reloaded, stopped.
    func testServiceMatchesTheDaemonsContract() throws {
        let settings = try Self.settings(of: String(contentsOf: serviceURL, encoding: .utf8))
        XCTAssertEqual(settings["Type"], ["notify"])
        XCTAssertEqual(settings["ExecStart"], [
            "/usr/local/bin/tapwire run --config ${CONFIGURATION_DIRECTORY}/tapwire.json --log-dir ${LOGS_DIRECTORY}",
        ])
        XCTAssertEqual(settings["ExecReload"], ["/bin/kill -HUP $MAINPID"])
        XCTAssertEqual(settings["KillSignal"], ["SIGTERM"])
        XCTAssertEqual(settings["WatchdogSec"], ["30s"])
        // log.loopNice calls setpriority, and the deflate thread sched_setscheduler (SCHED_IDLE),
        // which @resources (denied above them) holds.
        XCTAssertEqual(settings["SystemCallFilter"]?.last, "sched_setscheduler setpriority",
                       "the service must let the event loops raise their nice value and the deflater idle")
        XCTAssertEqual(settings["ConfigurationDirectory"], ["tapwire"])
        XCTAssertEqual(settings["LogsDirectory"], ["tapwire"])
        XCTAssertEqual(settings["StateDirectory"], ["tapwire"])
        XCTAssertEqual(settings["RestrictAddressFamilies"], ["AF_INET AF_INET6 AF_UNIX"])
    }

    private static func overallExposure(in output: String) -> Double? {
        guard let line = output.split(separator: "\n").first(where: { $0.contains("Overall exposure level") }),
              let colon = line.lastIndex(of: ":") else { return nil }
        let figure = line[line.index(after: colon)...].drop(while: { $0 == " " }).prefix(while: { $0.isNumber || $0 == "." })
        return Double(figure)
    }

    private static func settings(of unit: String) -> [String: [String]] {
        var settings: [String: [String]] = [:]
        for line in unit.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("[") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            settings[String(line[..<equals]), default: []].append(String(line[line.index(after: equals)...]))
        }
        return settings
    }
}
