// What every fuzz target shares, compiled into each (see Fuzz/build.sh):
// stopping on a broken invariant, and the depth of a JSON value.

@inline(never)
func violated(_ message: String) -> Never {
    print("INVARIANT VIOLATED: \(message)")
    fatalError(message)
}

func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
    if !condition() { violated(message()) }
}
