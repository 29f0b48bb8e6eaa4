package org.tent4j.store;

/**
 * The rules for ids a peer chooses (client ids, segment ids, engine segment names, hosts) and their escaping where they
 * are printed. The master prints them in its output ({@code EXPIRED <client>}), its log and {@code /metrics}, all
 * read line by line, so one newline in an id forged a line there.
 */
public final class PrintableId {
    /** Longest id accepted: a UUID is 36 characters, an engine segment name {@code host:port} rarely over 64. */
    public static final int MAX_LENGTH = 128;

    private PrintableId() {
    }

    /**
     * {@code value} if it is 1 to {@link #MAX_LENGTH} characters of printable ASCII without spaces ({@code !} to
     * {@code ~}); otherwise {@code INVALID_PARAMS} naming the field and showing the value escaped.
     */
    public static String require(String field, String value) {
        if (value == null || value.isEmpty()) {
            throw new StoreException(StoreError.INVALID_PARAMS, field + " is empty");
        }
        if (value.length() > MAX_LENGTH) {
            throw new StoreException(StoreError.INVALID_PARAMS, field + " of " + value.length()
                    + " characters is longer than the limit of " + MAX_LENGTH + " (starts '" + forLog(value.substring(0, 32)) + "…')");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < '!' || c > '~') {
                throw new StoreException(StoreError.INVALID_PARAMS, field + " '" + forLog(value) + "' has a character "
                        + "outside printable ASCII (U+" + String.format("%04X", (int) c) + " at " + i
                        + "); ids are '!' to '~' only");
            }
        }
        return value;
    }

    /**
     * {@code value} as one line of printable ASCII: backslash, control and non-ASCII characters (newlines included)
     * written as Java escapes, so a value read from a snapshot or a peer can never start a line of its own.
     */
    public static String forLog(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder sb = null;
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            boolean plain = c >= ' ' && c <= '~' && c != '\\';
            if (plain && sb == null) {
                continue;
            }
            if (sb == null) {
                sb = new StringBuilder(value.length() + 16).append(value, 0, i);
            }
            if (plain) {
                sb.append(c);
            } else {
                switch (c) {
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    default -> sb.append(String.format("\\u%04x", (int) c));
                }
            }
        }
        return sb == null ? value : sb.toString();
    }
}
