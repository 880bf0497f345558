# tests/unit/cache.mk
