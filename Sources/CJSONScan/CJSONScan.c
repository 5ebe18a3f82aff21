// Everything is in include/CJSONScan.h (static inline); SwiftPM needs a source file per C target.
#include "CJSONScan.h"
