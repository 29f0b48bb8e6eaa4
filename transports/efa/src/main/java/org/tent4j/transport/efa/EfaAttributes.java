package org.tent4j.transport.efa;

import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What this transport publishes in a segment descriptor, and how a peer reads it back.
 *
 * <p>Segment: {@code provider} (the provider that opened the endpoints, e.g. {@code efa} or {@code tcp;ofi_rxm}),
 * {@code addr} (hex of each endpoint's {@code fi_getname}, comma-separated when {@code endpoint_count > 1}),
 * {@code mr_mode} (hex bits, for diagnostics).
 *
 * <p>Buffer: {@code key} (the MR key, unsigned decimal) and {@code base} (hex; what RMA address the buffer's first
 * byte has, see {@link MrMode}). A {@code LOCAL_ONLY} buffer is registered for local use but publishes no key, so a
 * peer cannot even name it; see {@link EfaTransport#registerBuffer}.
 */
final class EfaAttributes {
    static final String PROVIDER = "provider";
    static final String ADDR = "addr";
    static final String MR_MODE = "mr_mode";
    static final String KEY = "key";
    static final String BASE = "base";

    private static final HexFormat HEX = HexFormat.of();

    private EfaAttributes() {
    }

    static Map<String, String> segment(String provider, byte[][] names, int mrMode) {
        StringBuilder addr = new StringBuilder();
        for (byte[] n : names) {
            if (!addr.isEmpty()) {
                addr.append(',');
            }
            addr.append(HEX.formatHex(n));
        }
        Map<String, String> m = new LinkedHashMap<>();
        m.put(PROVIDER, provider);
        m.put(ADDR, addr.toString());
        m.put(MR_MODE, "0x" + Integer.toHexString(mrMode));
        return Map.copyOf(m);
    }

    /** The endpoint addresses a peer published; throws IllegalArgumentException naming what is malformed. */
    static byte[][] addresses(String addr) {
        if (addr == null || addr.isBlank()) {
            throw new IllegalArgumentException("no '" + ADDR + "' attribute");
        }
        String[] parts = addr.split(",");
        byte[][] out = new byte[parts.length][];
        for (int i = 0; i < parts.length; i++) {
            String p = parts[i].strip();
            if (p.isEmpty() || (p.length() & 1) != 0) {
                throw new IllegalArgumentException("'" + ADDR + "' entry " + i + " is not hex: '" + p + "'");
            }
            out[i] = HEX.parseHex(p);
        }
        return out;
    }

    static Map<String, String> buffer(long key, long base) {
        return Map.of(KEY, Long.toUnsignedString(key), BASE, "0x" + Long.toHexString(base));
    }

    /** The key and base a peer published for a buffer, or {@code null} if it published none (LOCAL_ONLY). */
    static RemoteRegion region(Map<String, String> attributes) {
        String key = attributes.get(KEY);
        if (key == null) {
            return null;
        }
        String base = attributes.getOrDefault(BASE, "0x0");
        if (!base.startsWith("0x")) {
            throw new IllegalArgumentException("'" + BASE + "' is not 0x-prefixed hex: '" + base + "'");
        }
        return new RemoteRegion(Long.parseUnsignedLong(key), Long.parseUnsignedLong(base.substring(2), 16));
    }

    /** A peer's buffer as this transport addresses it. */
    record RemoteRegion(long key, long base) {
    }
}
