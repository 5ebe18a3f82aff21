extension StaticString {
    /// The literal's UTF-8 bytes (static storage, valid for the whole run).
    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: utf8Start, count: utf8CodeUnitCount) }
}
