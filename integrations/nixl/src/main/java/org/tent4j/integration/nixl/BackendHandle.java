package org.tent4j.integration.nixl;

import java.util.Map;

/** A created backend: its canonical id and its effective options (the caller's values over the defaults). */
public record BackendHandle(String id, Map<String, String> effectiveOptions) {
}
