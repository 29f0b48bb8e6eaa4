package org.tent4j.metadata.redis;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Credentials;

/**
 * A parsed {@code redis://[[user]:password@]host[:port][/db]} URI ({@code rediss://} for TLS). As in the Redis URI scheme, a user info without ':'
 * is taken as the password of the default user. Port 6379 and database 0 are the defaults.
 *
 * @param masked the URI with the password replaced by {@code ***}, for messages and logs
 */
record RedisAddress(String host, int port, String user, String password, int database, boolean tls, String masked) {
    static final int DEFAULT_PORT = 6379;

    @Override
    public String toString() {
        return masked;
    }

    static RedisAddress parse(URI uri) {
        String raw = uri.toString();
        String maskedRaw = Credentials.mask(raw);
        boolean tls = "rediss".equalsIgnoreCase(uri.getScheme());
        if (!tls && !"redis".equalsIgnoreCase(uri.getScheme())) {
            throw malformed(maskedRaw, "expected redis://[user:password@]host:port[/db] (rediss:// for TLS)");
        }
        String host = uri.getHost();
        if (host == null || host.isEmpty()) {
            throw malformed(maskedRaw, "no host (a host name with '_' or a list of hosts is not supported)");
        }
        int port = uri.getPort() < 0 ? DEFAULT_PORT : uri.getPort();
        String user = null;
        String password = null;
        String rawUserInfo = uri.getRawUserInfo();
        if (rawUserInfo != null) {
            int colon = rawUserInfo.indexOf(':');
            if (colon < 0) {
                password = decode(rawUserInfo);
            } else {
                String u = decode(rawUserInfo.substring(0, colon));
                user = u.isEmpty() ? null : u;
                password = decode(rawUserInfo.substring(colon + 1));
            }
        }
        int database = 0;
        String path = uri.getRawPath();
        if (path != null && !path.isEmpty() && !path.equals("/")) {
            String db = path.substring(1);
            try {
                database = Integer.parseInt(db);
            } catch (NumberFormatException e) {
                throw malformed(maskedRaw, "database '" + db + "' is not a number");
            }
            if (database < 0) {
                throw malformed(maskedRaw, "database " + database + " is negative");
            }
        }
        if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
            throw malformed(maskedRaw, "redis URIs take no query or fragment; options go under metadata.redis.*");
        }
        String hostPart = host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host;
        StringBuilder m = new StringBuilder(tls ? "rediss://" : "redis://");
        if (password != null) {
            m.append(user == null ? "" : user).append(':').append(Credentials.MASK).append('@');
        }
        m.append(hostPart).append(':').append(port);
        if (database != 0) {
            m.append('/').append(database);
        }
        return new RedisAddress(host, port, user, password, database, tls, m.toString());
    }

    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    private static TransferException malformed(String masked, String why) {
        return new TransferException(ErrorCode.CONFIG, "malformed redis metadata URI '" + masked + "': " + why);
    }
}
