package org.tent4j.metadata.etcd;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.Credentials;

/**
 * A parsed {@code etcd://[user:password@]host1:port1[,host2:port2...]} URI (endpoints separated by ',' or ';', as in
 * Mooncake; port 2379 when left out; IPv6 hosts in brackets).
 *
 * @param endpoints gRPC endpoints for jetcd, {@code http://host:port}
 * @param user      etcd user, or {@code null}
 * @param password  its password, or {@code null}
 * @param masked    the URI with the password replaced by {@code ***}, for messages and logs
 */
record EtcdAddress(List<String> endpoints, String user, String password, boolean tls, String masked) {
    static final int DEFAULT_PORT = 2379;

    @Override
    public String toString() {
        return masked;
    }

    static EtcdAddress parse(URI uri) {
        String raw = uri.toString();
        int schemeEnd = raw.indexOf("://");
        String scheme = schemeEnd < 0 ? "" : raw.substring(0, schemeEnd).toLowerCase(java.util.Locale.ROOT);
        if (!scheme.equals("etcd") && !scheme.equals("etcds")) {
            throw malformed(Credentials.mask(raw), "expected etcd://host:port[,host:port...] (etcds:// for TLS)");
        }
        boolean tls = scheme.equals("etcds");
        String rest = raw.substring(schemeEnd + 3);
        int at = rest.lastIndexOf('@');
        String userInfo = at >= 0 ? rest.substring(0, at) : null;
        String hostList = at >= 0 ? rest.substring(at + 1) : rest;
        String user = null;
        String password = null;
        String credentials = userInfo == null ? "" : userInfo + "@";
        String masked = Credentials.mask(scheme + "://" + credentials + hostList);
        if (userInfo != null) {
            int colon = userInfo.indexOf(':');
            if (colon <= 0) {
                throw malformed(masked, "credentials must be user:password");
            }
            user = decode(userInfo.substring(0, colon));
            password = decode(userInfo.substring(colon + 1));
        }
        int slash = hostList.indexOf('/');
        int query = hostList.indexOf('?');
        if (query >= 0 && (slash < 0 || query < slash)) {
            throw malformed(masked, "etcd URIs take no query; options go under metadata.etcd.*");
        }
        if (slash >= 0) {
            String path = hostList.substring(slash);
            if (!path.equals("/")) {
                throw malformed(masked, "etcd URIs take no path (got '" + path + "')");
            }
            hostList = hostList.substring(0, slash);
            masked = Credentials.mask(scheme + "://" + credentials + hostList);
        }
        List<String> endpoints = new ArrayList<>();
        for (String part : hostList.split("[,;]", -1)) {
            String hp = part.strip();
            if (hp.isEmpty()) {
                throw malformed(masked, "empty endpoint in '" + hostList + "'");
            }
            endpoints.add((tls ? "https://" : "http://") + endpoint(masked, hp));
        }
        return new EtcdAddress(List.copyOf(endpoints), user, password, tls, masked);
    }

    private static String endpoint(String masked, String hostPort) {
        String host;
        String portText = null;
        if (hostPort.startsWith("[")) {
            int close = hostPort.indexOf(']');
            if (close < 0) {
                throw malformed(masked, "unclosed '[' in '" + hostPort + "'");
            }
            host = hostPort.substring(0, close + 1);
            String after = hostPort.substring(close + 1);
            if (!after.isEmpty()) {
                if (!after.startsWith(":")) {
                    throw malformed(masked, "expected ':port' after '" + host + "'");
                }
                portText = after.substring(1);
            }
        } else {
            int colon = hostPort.lastIndexOf(':');
            host = colon >= 0 ? hostPort.substring(0, colon) : hostPort;
            portText = colon >= 0 ? hostPort.substring(colon + 1) : null;
        }
        if (host.isEmpty() || host.contains(":") && !host.startsWith("[")) {
            throw malformed(masked, "bad host in '" + hostPort + "'");
        }
        int port = DEFAULT_PORT;
        if (portText != null) {
            try {
                port = Integer.parseInt(portText);
            } catch (NumberFormatException e) {
                throw malformed(masked, "port '" + portText + "' of '" + hostPort + "' is not a number");
            }
            if (port < 1 || port > 65535) {
                throw malformed(masked, "port " + port + " of '" + hostPort + "' is out of range");
            }
        }
        return host + ":" + port;
    }

    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    private static TransferException malformed(String masked, String why) {
        return new TransferException(ErrorCode.CONFIG, "malformed etcd metadata URI '" + masked + "': " + why);
    }
}
