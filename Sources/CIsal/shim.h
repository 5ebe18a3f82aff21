// Intel ISA-L's deflate (Debian libisal-dev): gzip output several times faster than
// zlib's fastest level, so rotated logs are compressed while traffic runs.
#include <isa-l/igzip_lib.h>

// Macros Swift cannot import.
static const unsigned tapwire_isal_gzip = IGZIP_GZIP;
static const unsigned tapwire_isal_lvl1_buffer = ISAL_DEF_LVL1_DEFAULT;
static const int tapwire_isal_stream_end = ZSTATE_END;
