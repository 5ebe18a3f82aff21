import Foundation
import XCTest

/// The ResponseSerialization library product is an API other code builds on: every public
/// declaration carries a doc comment, and every public function or initializer that takes
/// arguments documents them (`- Parameter` / `- Parameters`, defaults included).
final class PublicAPIDocumentationTests: XCTestCase {
    private static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/ResponseSerialization")

    /// `file:line: declaration` for each public declaration lacking what it needs.
    static func undocumented(in text: String, file: String) -> [String] {
        let lines = text.components(separatedBy: "\n")
        var found: [String] = []
        for (index, line) in lines.enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            guard let declaration = Self.publicDeclaration(code) else { continue }
            var above = index - 1
            while above >= 0 && lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("@") { above -= 1 }
            var doc: [String] = []
            while above >= 0 && lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("///") {
                doc.append(lines[above])
                above -= 1
            }
            let takesArguments = Self.takesArguments(declaration)
            if doc.isEmpty || (takesArguments && !doc.contains { $0.contains("- Parameter") }) {
                found.append("\(file):\(index + 1): \(code)")
            }
        }
        return found
    }

    /// The declaration after `public` and any attributes, or nil when `code` declares nothing public.
    static func publicDeclaration(_ code: String) -> Substring? {
        var rest = Substring(code)
        while rest.hasPrefix("@"), let space = rest.firstIndex(of: " ") {
            rest = rest[rest.index(after: space)...].drop { $0 == " " }
        }
        guard rest.hasPrefix("public ") else { return nil }
        return rest.dropFirst("public ".count)
    }

    /// Whether a function or initializer declaration has parameters.
    static func takesArguments(_ declaration: Substring) -> Bool {
        let words = declaration.split(separator: " ")
        guard words.contains(where: { $0 == "func" || $0.hasPrefix("init") }) || declaration.hasPrefix("init"),
              let open = declaration.firstIndex(of: "(") else { return false }
        // A generic clause's `(` would come after `<`; none of the signatures nest one.
        let after = declaration[declaration.index(after: open)...]
        return !after.hasPrefix(")")
    }

    func testTheCheckFindsWhatItLooksFor() {
        let text = """
            /// Documented.
            public struct A {
                public var bare: Int
                /// Takes one.
                public func f(_ x: Int) {}
                /// Takes one.
                /// - Parameter x: Any.
                @discardableResult
                public func g(_ x: Int) -> Int { x }
                /// Takes none.
                public func h() {}
            }
            """
        XCTAssertEqual(Self.undocumented(in: text, file: "T.swift"),
                       ["T.swift:3: public var bare: Int", "T.swift:5: public func f(_ x: Int) {}"])
    }

    func testEveryPublicDeclarationIsDocumented() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path)
            .filter { $0.hasSuffix(".swift") }.sorted()
        XCTAssertFalse(files.isEmpty, "no sources found at \(Self.sources.path)")
        var missing: [String] = []
        for file in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(file), encoding: .utf8)
            missing += Self.undocumented(in: text, file: file)
        }
        XCTAssertEqual(missing, [], "public declarations without a doc comment or without their parameters:\n"
                       + missing.joined(separator: "\n"))
    }
}
