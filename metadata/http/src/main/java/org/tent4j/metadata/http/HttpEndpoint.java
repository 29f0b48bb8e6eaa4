package org.tent4j.metadata.http;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

import okhttp3.HttpUrl;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Credentials;

/**
 * A parsed {@code http://[user:password@]host[:port][/path]} metadata endpoint. As in Mooncake the whole URL is the
 * endpoint ({@code ?key=} is appended); credentials, if any, are sent as HTTP basic authentication.
 *
 * @param url           the endpoint without credentials
 * @param authorization the {@code Authorization} header value, or {@code null}
 * @param masked        the URI with the password replaced by {@code ***}
 */
record HttpEndpoint(HttpUrl url, String authorization, String masked) {

    @Override
    public String toString() {
        return masked;
    }

    /** The long-poll URL: the endpoint's path with {@value MetadataHttpProtocol#WATCH_SUFFIX} appended. */
    HttpUrl watchUrl() {
        String path = url.encodedPath();
        String watchPath = (path.endsWith("/") ? path.substring(0, path.length() - 1) : path)
                + MetadataHttpProtocol.WATCH_SUFFIX;
        return url.newBuilder().encodedPath(watchPath).build();
    }

    static HttpEndpoint parse(URI uri) {
        String raw = uri.toString();
        String maskedRaw = Credentials.mask(raw);
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(java.util.Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            throw malformed(maskedRaw, "expected http://host:port/path or https://host:port/path");
        }
        if (uri.getHost() == null || uri.getHost().isEmpty()) {
            throw malformed(maskedRaw, "no host");
        }
        if (uri.getRawFragment() != null) {
            throw malformed(maskedRaw, "a fragment is not allowed");
        }
        String authorization = null;
        String userInfo = uri.getRawUserInfo();
        if (userInfo != null) {
            int colon = userInfo.indexOf(':');
            String user = decode(colon < 0 ? userInfo : userInfo.substring(0, colon));
            String password = colon < 0 ? "" : decode(userInfo.substring(colon + 1));
            authorization = okhttp3.Credentials.basic(user, password, StandardCharsets.UTF_8);
        }
        StringBuilder plain = new StringBuilder(scheme).append("://").append(uri.getRawAuthority().substring(
                userInfo == null ? 0 : userInfo.length() + 1));
        if (uri.getRawPath() != null) {
            plain.append(uri.getRawPath());
        }
        if (uri.getRawQuery() != null) {
            plain.append('?').append(uri.getRawQuery());
        }
        HttpUrl url = HttpUrl.parse(plain.toString());
        if (url == null) {
            throw malformed(maskedRaw, "not a valid HTTP URL");
        }
        if (url.queryParameter("key") != null) {
            throw malformed(maskedRaw, "the endpoint must not carry a 'key' parameter; it is added per request");
        }
        return new HttpEndpoint(url, authorization, maskedRaw);
    }

    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    private static TransferException malformed(String masked, String why) {
        return new TransferException(ErrorCode.CONFIG, "malformed http metadata URI '" + masked + "': " + why);
    }
}
