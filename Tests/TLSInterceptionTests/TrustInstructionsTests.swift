@testable import TLSInterception
import XCTest

final class TrustInstructionsTests: XCTestCase {
    func testNamesEveryTrustMechanismWithThePath() {
        let text = TrustInstructions.text(caPath: "/var/lib/tapwire/ca/ca.pem")
        for expected in [
            "sudo cp /var/lib/tapwire/ca/ca.pem /usr/local/share/ca-certificates/tapwire.crt && sudo update-ca-certificates",
            "curl --cacert /var/lib/tapwire/ca/ca.pem",
            "NODE_EXTRA_CA_CERTS=/var/lib/tapwire/ca/ca.pem",
            "REQUESTS_CA_BUNDLE=/var/lib/tapwire/ca/ca.pem",
            "SSL_CERT_FILE=/var/lib/tapwire/ca/ca.pem",
            "Warning:",
        ] {
            XCTAssertTrue(text.contains(expected), "missing: \(expected)\n\(text)")
        }
        XCTAssertFalse(text.contains("BEGIN"))
    }

    /// `ca export` with the default `tls.caDirectory` ("ca") gave relative exports, which
    /// break when the client runs from another directory.
    func testARelativePathIsMadeAbsolute() {
        let text = TrustInstructions.text(caPath: "ca/ca.pem")
        let cwd = FileManager.default.currentDirectoryPath
        XCTAssertTrue(text.contains("NODE_EXTRA_CA_CERTS=\(cwd)/ca/ca.pem") || text.contains("NODE_EXTRA_CA_CERTS='\(cwd)/ca/ca.pem'"), text)
        XCTAssertFalse(text.contains("=ca/ca.pem"), text)
    }

    func testPathsWithSpacesOrQuotesAreShellQuoted() {
        let text = TrustInstructions.text(caPath: "/home/me/it's here/ca.pem")
        XCTAssertTrue(text.contains("curl --cacert '/home/me/it'\\''s here/ca.pem'"), text)
    }
}
