#ifndef TAPWIRE_COPENSSL_SHIM_H
#define TAPWIRE_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/err.h>
#include <openssl/ec.h>
#include <openssl/rand.h>
#include <openssl/bn.h>

// OpenSSL macros (or variadic functions) Swift cannot call; each wrapper is
// the macro itself and nothing more.

static inline EVP_PKEY *tw_EVP_EC_gen_P256(void) {
    return EVP_EC_gen("P-256");
}

static inline void tw_OPENSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

static inline long tw_BIO_get_mem_data(BIO *bio, char **data) {
    return BIO_get_mem_data(bio, data);
}

static inline int tw_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline int tw_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*callback)(SSL *, int *, void *)) {
    return (int)SSL_CTX_set_tlsext_servername_callback(ctx, callback);
}

static inline int tw_SSL_CTX_set_tlsext_servername_arg(SSL_CTX *ctx, void *arg) {
    return (int)SSL_CTX_set_tlsext_servername_arg(ctx, arg);
}

static inline int tw_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

// SSL_OP_* are 64-bit shifted casts the importer skips.
static inline void tw_SSL_CTX_disable_renegotiation(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
}

static inline void tw_SSL_set_ignore_unexpected_eof(SSL *ssl) {
    SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
}

static inline unsigned long tw_XN_FLAG_RFC2253(void) {
    return XN_FLAG_RFC2253;
}

// STACK_OF(GENERAL_NAME) helpers are macros generated per type.
static inline int tw_sk_GENERAL_NAME_push(GENERAL_NAMES *names, GENERAL_NAME *name) {
    return sk_GENERAL_NAME_push(names, name);
}

static inline GENERAL_NAMES *tw_GENERAL_NAMES_new(void) {
    return sk_GENERAL_NAME_new_null();
}

static inline void tw_GENERAL_NAMES_free(GENERAL_NAMES *names) {
    sk_GENERAL_NAME_pop_free(names, GENERAL_NAME_free);
}
#endif
