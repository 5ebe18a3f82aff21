/// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`): what the log's timestamps and protobuf's `Timestamp` are written with,
/// without Foundation's calendars.
public struct CivilDate: Equatable, Sendable {
    /// The year, 1970 for day 0; years before 1 come out as 0 and below.
    public var year: Int64
    /// 1 to 12.
    public var month: Int64
    /// 1 to 31.
    public var day: Int64

    /// - Parameter days: Days since 1970-01-01, negative before it.
    public init(daysSince1970 days: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }
}
