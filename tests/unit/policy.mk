# tests/unit/policy.mk
