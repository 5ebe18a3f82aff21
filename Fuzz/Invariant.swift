// What every fuzz target checks with (compiled into each, see build.sh): a broken invariant
// prints its message and aborts, which libFuzzer reports as a crash with the input.

@inline(never)
func violated(_ message: String) -> Never {
    print("INVARIANT VIOLATED: \(message)")
    fatalError(message)
}

func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { violated(message()) }
}
