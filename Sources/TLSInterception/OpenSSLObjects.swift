import COpenSSL

// Owners of OpenSSL objects: each frees its object exactly once, in deinit,
// so early returns and thrown errors cannot leak.

/// An `EVP_PKEY`. Deliberately has no description: it must never be printed.
final class PrivateKey {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    static func generateP256() throws(TLSSetupError) -> PrivateKey {
        guard let key = tw_EVP_EC_gen_P256() else {
            throw .openSSL(operation: "EC P-256 key generation", details: drainOpenSSLErrors())
        }
        return PrivateKey(taking: key)
    }
}

/// An `X509`.
final class Certificate {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { X509_free(pointer) }
}

/// A `BIO` (memory or file).
final class BIOHandle {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { BIO_free_all(pointer) }

    static func memory() throws(TLSSetupError) -> BIOHandle {
        guard let method = BIO_s_mem(), let bio = BIO_new(method) else {
            throw .openSSL(operation: "BIO_new(memory)", details: drainOpenSSLErrors())
        }
        return BIOHandle(taking: bio)
    }

    /// The bytes written so far to a memory BIO, as UTF-8 text.
    func contents() -> String {
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = tw_BIO_get_mem_data(pointer, &data)
        guard let data, length > 0 else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
            String(decoding: UnsafeBufferPointer(start: $0, count: Int(length)), as: UTF8.self)
        }
    }
}

/// Empties this thread's OpenSSL error queue and returns it as text, so a
/// failure here never leaks stale errors into the next OpenSSL call (the
/// engine's bufferevents read the same queue).
func drainOpenSSLErrors() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(stringFromCBuffer(buffer))
    }
    return messages.isEmpty ? "no OpenSSL error reported" : messages.joined(separator: "; ")
}

func stringFromCBuffer(_ buffer: [CChar]) -> String {
    let bytes = buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }
    return String(decoding: bytes, as: UTF8.self)
}

func stringFromCString(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    return String(cString: pointer)
}
