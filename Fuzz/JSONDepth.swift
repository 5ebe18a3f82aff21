// Containers on the deepest path of a JSON value (a scalar is 0, `[]` is 1); iterative,
// so a deep value cannot exhaust the stack. Compiled into the targets that check depth.

func depth(_ value: JSON) -> Int {
    var deepest = 0
    var pending: [(JSON, Int)] = [(value, 0)]
    while let (v, d) = pending.popLast() {
        switch v {
        case .array(let elements):
            deepest = max(deepest, d + 1)
            for e in elements { pending.append((e, d + 1)) }
        case .object(let members):
            deepest = max(deepest, d + 1)
            for m in members { pending.append((m.value, d + 1)) }
        default:
            deepest = max(deepest, d)
        }
    }
    return deepest
}
