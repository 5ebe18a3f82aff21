/// A token bucket for frames a peer may send at a bounded rate (RST_STREAM, SETTINGS):
/// `burst` at once, refilled at `perSecond`. Pure: the caller passes the clock, so tests
/// drive it without waiting.
struct FrameRateLimit: Equatable {
    let burst: Double
    let perSecond: Double
    private var tokens: Double
    private var last: Double?

    init(burst: Int, perSecond: Int) {
        self.burst = Double(max(1, burst))
        self.perSecond = Double(max(0, perSecond))
        tokens = self.burst
    }

    /// One frame at `now` (seconds, monotonic): false once the bucket is empty.
    mutating func admit(now: Double) -> Bool {
        if let last, now > last { tokens = min(burst, tokens + (now - last) * perSecond) }
        last = max(last ?? now, now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
