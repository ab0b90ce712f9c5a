"""Every use of vcrpy: installing llmcassette on a VCR, the persister and serializer, the
bridge between vcrpy's request/response objects and llmcassette's, the httpx stubs, lookup.

Nothing outside this package imports vcrpy. vcrpy itself is imported only when a cassette
is configured: importing it while pytest loads plugins would stop pytest-recording from
registering ``vcr.matchers`` for assertion rewriting.
"""
