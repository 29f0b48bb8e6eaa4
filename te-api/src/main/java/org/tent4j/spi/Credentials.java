package org.tent4j.spi;

import java.net.URI;
import java.util.regex.Pattern;

/**
 * Hides the credentials of metadata store URIs (and any other URI text) before they reach a message, a log line or a
 * descriptor. Every metadata backend and the runtime use this one implementation, so that a form one of them forgot
 * (a password with '@', a list of URIs, a URI too malformed to parse) cannot leak through another.
 *
 * <p>The rule is textual and errs towards hiding: everything before the last '@' of a URI's authority is user
 * information, shown as {@code user:***} when it has a ':' and as {@code ***} when it has none (Redis takes a lone
 * user information as a password, a bearer-style endpoint as a token). An '@' after a '/', '?' or '#' stays visible only
 * when what precedes that character is plainly a host list ({@code host[:port][,host[:port]...]}), so a query that
 * carries an address is kept but a password with a raw '/' is not shown. Several URIs in one text (separated by ',',
 * ';' or white space, each starting with {@code scheme://}) are masked each on its own.
 */
public final class Credentials {
    /** What a secret is replaced by. */
    public static final String MASK = "***";

    private static final Pattern URI_START = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*://");
    /** A scheme, also one followed by fewer slashes than a URI needs ({@code redis:/u:p@h} must not pass as a host). */
    private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*:/*");
    private static final Pattern HOST_PORT = Pattern.compile("(\\[[0-9A-Fa-f:.%a-zA-Z]*\\]|[A-Za-z0-9._~%-]*)(:[0-9]*)?");

    private Credentials() {
    }

    /**
     * The URI with its password (or lone user information) replaced by {@value #MASK}.
     *
     * @param uri a URI, or {@code null}
     * @return the masked text; {@code "null"} for {@code null}
     */
    public static String mask(URI uri) {
        return uri == null ? "null" : mask(uri.toString());
    }

    /**
     * The text with the password (or lone user information) of every URI in it replaced by {@value #MASK}; the text is
     * never required to parse as a URI.
     *
     * @param text one URI, a list of URIs, or text that failed to parse as one; {@code null} gives {@code null}
     * @return the masked text, the same text when it carries no credentials
     */
    public static String mask(String text) {
        if (text == null || text.indexOf('@') < 0) {
            return text;
        }
        StringBuilder out = new StringBuilder(text.length());
        int start = 0;
        while (start < text.length()) {
            int end = nextUriStart(text, start);
            maskOne(text, start, end, out);
            start = end;
        }
        return out.toString();
    }

    /** Where the URI after the one starting at {@code from} begins, or the text's end. */
    private static int nextUriStart(String text, int from) {
        var m = URI_START.matcher(text);
        for (int i = from + 1; i < text.length(); i++) {
            char before = text.charAt(i - 1);
            if ((before == ',' || before == ';' || Character.isWhitespace(before)) && m.region(i, text.length()).lookingAt()) {
                return i;
            }
        }
        return text.length();
    }

    private static void maskOne(String text, int start, int end, StringBuilder out) {
        var scheme = SCHEME.matcher(text).region(start, end);
        boolean hasScheme = scheme.lookingAt();
        int authority = hasScheme ? scheme.end() : start;
        int at = text.lastIndexOf('@', end - 1);
        if (at < authority) {
            out.append(text, start, end);
            return;
        }
        int hostEnd = firstOf(text, authority, end, "/?#");
        if (hasScheme && hostEnd < at && isHostList(text.substring(authority, hostEnd))) {
            out.append(text, start, end);
            return;
        }
        int colon = text.indexOf(':', authority);
        out.append(text, start, authority);
        // a user part with an '@' is no user name: a raw '@' in a password-only user information went before the ':'
        if (colon >= 0 && colon < at && text.lastIndexOf('@', colon) < authority) {
            out.append(text, authority, colon + 1);
        }
        out.append(MASK).append(text, at, end);
    }

    private static int firstOf(String text, int from, int to, String chars) {
        for (int i = from; i < to; i++) {
            if (chars.indexOf(text.charAt(i)) >= 0) {
                return i;
            }
        }
        return to;
    }

    private static boolean isHostList(String authority) {
        for (String hostPort : authority.split("[,;]", -1)) {
            if (!HOST_PORT.matcher(hostPort.strip()).matches()) {
                return false;
            }
        }
        return true;
    }
}
