import CLibevent
import Foundation

/// A bufferevent's read timeout (nil: none). It only ticks while reading is enabled.
func setBuffereventReadTimeout(_ bev: OpaquePointer, _ seconds: Double?) {
    if let s = seconds {
        var tv = timeval(tv_sec: Int(s), tv_usec: Int((s - Double(Int(s))) * 1e6))
        bufferevent_set_timeouts(bev, &tv, nil)
    } else {
        bufferevent_set_timeouts(bev, nil, nil)
    }
}
