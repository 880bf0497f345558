# unit tests: each binary is one cmocka group (one TAP plan).
