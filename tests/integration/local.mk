# integration tests: TAP shell scripts against real parts.
