import COpenSSL
import Foundation
@testable import TLSInterception
import XCTest

/// A fresh directory under the system temp dir, removed by the test's teardown.
func makeTemporaryDirectory(_ test: XCTestCase) throws -> String {
    let path = NSTemporaryDirectory() + "tapwire-tls-" + UUID().uuidString
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(atPath: path) }
    return path
}

func fileMode(_ path: String) -> Int? {
    guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
          let mode = attributes[.posixPermissions] as? NSNumber else { return nil }
    return mode.intValue & 0o777
}

/// Parses a PEM certificate; the caller frees it with X509_free.
func parseCertificate(pem: String) -> OpaquePointer? {
    let bytes = Array(pem.utf8)
    return bytes.withUnsafeBytes { raw -> OpaquePointer? in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
        defer { BIO_free(bio) }
        return PEM_read_bio_X509(bio, nil, nil, nil)
    }
}

/// The leaf certificate a server context presents, with its own reference:
/// the caller frees it with X509_free, whatever happens to the context.
func leafCertificate(_ context: ServerContext) -> OpaquePointer? {
    withExtendedLifetime(context) {
        guard let certificate = SSL_CTX_get0_certificate(context.sslContext),
              X509_up_ref(certificate) == 1 else { return nil }
        return certificate
    }
}

func pem(ofCertificate certificate: OpaquePointer) -> String {
    guard let bio = BIO_new(BIO_s_mem()) else { return "" }
    defer { BIO_free(bio) }
    guard PEM_write_bio_X509(bio, certificate) == 1 else { return "" }
    var data: UnsafeMutablePointer<CChar>? = nil
    let length = tw_BIO_get_mem_data(bio, &data)
    guard let data, length > 0 else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: data, count: Int(length)), as: UTF8.self)
}

/// X509_verify_cert against a store holding only `authorityPEM`, for the TLS
/// server purpose (which also checks extendedKeyUsage). Returns the X509
/// error code (0 = X509_V_OK).
func verify(leaf: OpaquePointer, authorityPEM: String, purpose: Int32 = X509_PURPOSE_SSL_SERVER) -> Int32 {
    guard let authority = parseCertificate(pem: authorityPEM) else { return -1 }
    defer { X509_free(authority) }
    guard let store = X509_STORE_new() else { return -1 }
    defer { X509_STORE_free(store) }
    guard X509_STORE_add_cert(store, authority) == 1, let context = X509_STORE_CTX_new() else { return -1 }
    defer { X509_STORE_CTX_free(context) }
    guard X509_STORE_CTX_init(context, store, leaf, nil) == 1,
          X509_STORE_CTX_set_purpose(context, purpose) == 1 else { return -1 }
    _ = X509_verify_cert(context)
    ERR_clear_error()
    return X509_STORE_CTX_get_error(context)
}

func commonName(of certificate: OpaquePointer) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    let length = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, &buffer, Int32(buffer.count))
    guard length >= 0 else { return "" }
    return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Seconds between notBefore and notAfter.
func lifetimeSeconds(of certificate: OpaquePointer) -> Int {
    var days: Int32 = 0
    var seconds: Int32 = 0
    guard ASN1_TIME_diff(&days, &seconds, X509_getm_notBefore(certificate), X509_getm_notAfter(certificate)) == 1 else {
        return Int.max
    }
    return Int(days) * 86_400 + Int(seconds)
}

/// A client SSL_CTX whose only trust anchor is `authorityPEM`; caller frees it.
func makeClientContext(trusting authorityPEM: String) -> OpaquePointer? {
    guard let context = SSL_CTX_new(TLS_client_method()) else { return nil }
    guard let authority = parseCertificate(pem: authorityPEM) else { SSL_CTX_free(context); return nil }
    defer { X509_free(authority) }
    guard X509_STORE_add_cert(SSL_CTX_get_cert_store(context), authority) == 1 else {
        SSL_CTX_free(context)
        return nil
    }
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
    return context
}

func offerHTTP11(_ ssl: OpaquePointer) {
    let protocols: [UInt8] = [2] + Array("h2".utf8) + [8] + Array("http/1.1".utf8)
    _ = SSL_set_alpn_protos(ssl, protocols, UInt32(protocols.count))
}

struct HandshakeOutcome {
    var clientSucceeded = false
    var serverSucceeded = false
    var clientALPN: String?
    var serverALPN: String?
    var serverSawSNI: String?
    var clientVerifyResult: Int = -1
    var clientVerifyDescription = ""
}

/// Runs a TLS handshake in memory between two SSL objects joined by a BIO
/// pair, alternating until both finish or either fails. Frees both SSLs.
func runHandshake(client: OpaquePointer, server: OpaquePointer) -> HandshakeOutcome {
    defer {
        SSL_free(client)
        SSL_free(server)
        ERR_clear_error()
    }
    var clientEnd: OpaquePointer? = nil
    var serverEnd: OpaquePointer? = nil
    var outcome = HandshakeOutcome()
    guard BIO_new_bio_pair(&clientEnd, 0, &serverEnd, 0) == 1 else { return outcome }
    SSL_set_bio(client, clientEnd, clientEnd)
    SSL_set_bio(server, serverEnd, serverEnd)
    SSL_set_connect_state(client)
    SSL_set_accept_state(server)

    var clientFailed = false
    var serverFailed = false
    func step(_ ssl: OpaquePointer, done: inout Bool, failed: inout Bool) {
        guard !done && !failed else { return }
        let result = SSL_do_handshake(ssl)
        if result == 1 { done = true; return }
        let error = SSL_get_error(ssl, result)
        if error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE { failed = true }
    }
    for _ in 0..<50 {
        step(client, done: &outcome.clientSucceeded, failed: &clientFailed)
        step(server, done: &outcome.serverSucceeded, failed: &serverFailed)
        if clientFailed || serverFailed { break }
        if outcome.clientSucceeded && outcome.serverSucceeded { break }
    }
    outcome.clientVerifyResult = SSL_get_verify_result(client)
    outcome.clientVerifyDescription = UpstreamTLSContext.describeVerifyError(client)
    outcome.clientALPN = selectedALPN(client)
    outcome.serverALPN = selectedALPN(server)
    if let name = SSL_get_servername(server, TLSEXT_NAMETYPE_host_name) {
        outcome.serverSawSNI = String(cString: name)
    }
    return outcome
}

private func selectedALPN(_ ssl: OpaquePointer) -> String? {
    var data: UnsafePointer<UInt8>? = nil
    var length: UInt32 = 0
    SSL_get0_alpn_selected(ssl, &data, &length)
    guard let data, length > 0 else { return nil }
    return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
}

