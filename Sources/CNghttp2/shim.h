#include <nghttp2/nghttp2.h>

/* The HTTP/2 framing and HPACK library the engine drives from its event loops.
   The flood limits the engine sets (nghttp2_option_set_stream_reset_rate_limit,
   nghttp2_option_set_max_continuations) came to Debian's 1.52 as security backports;
   against a library without them the engine does not compile, rather than run with
   protections missing. */
