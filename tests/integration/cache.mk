# tests/integration/cache.mk
