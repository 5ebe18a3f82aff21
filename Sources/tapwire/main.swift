print("tapwire")
