package org.tent4j.metadata.http;

import java.io.IOException;
import java.net.URI;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.net.ssl.X509TrustManager;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.api.ConfigException;
import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;

/**
 * Metadata stores behind an HTTP endpoint: {@code http://host:port/path}, the whole URL being the endpoint as in
 * Mooncake (its Go and Python servers serve {@code /metadata}; so does {@link HttpMetadataServer}). {@code https://}
 * talks TLS, trusting the JDK's CAs or those of {@code metadata.http.ca-file}; user info in the URI is sent as Basic
 * authentication.
 */
public final class HttpMetadataStoreProvider implements MetadataStoreProvider {
    private static final Logger LOG = LoggerFactory.getLogger(HttpMetadataStoreProvider.class);
    static final String TIMEOUT = "timeout";
    static final String CONNECT_TIMEOUT = "connect-timeout";
    static final String WATCH_HOLD = "watch-hold";
    static final String WATCH_POLL_INTERVAL = "watch-poll-interval";
    static final String CA_FILE = "ca-file";

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of(TIMEOUT, OptionSpec.Type.DURATION, "3s",
                    "how long one GET, PUT or DELETE may take (Mooncake uses 3 s)"),
            OptionSpec.of(CONNECT_TIMEOUT, OptionSpec.Type.DURATION, "1500ms",
                    "TCP connect timeout (Mooncake uses 1.5 s)"),
            OptionSpec.of(WATCH_HOLD, OptionSpec.Type.DURATION, "25s",
                    "how long a tent4j server may hold one long-poll watch request open"),
            OptionSpec.of(WATCH_POLL_INTERVAL, OptionSpec.Type.DURATION, "1s",
                    "how often a watched key is read from a plain (Mooncake) server, which has no watch endpoint"),
            OptionSpec.of(CA_FILE, OptionSpec.Type.STRING, "",
                    "https:// only: PEM file of the CA certificate(s) to trust instead of the JDK's default ones"));

    @Override
    public List<String> schemes() {
        return List.of("http", "https");
    }

    @Override
    public String description() {
        return "HTTP metadata server (Mooncake protocol + tent4j TTL/watch): http[s]://[user:password@]host:port/path";
    }

    @Override
    public List<OptionSpec> options() {
        return OPTIONS;
    }

    @Override
    public MetadataStore open(URI uri, Map<String, String> options) {
        if (uri == null) {
            throw new TransferException(ErrorCode.CONFIG, "http metadata URI is missing");
        }
        HttpEndpoint endpoint = HttpEndpoint.parse(uri);
        OptionValues values = OptionValues.parse("metadata.http.", OPTIONS, options == null ? Map.of() : options);
        X509TrustManager trust = trust(values.getString(CA_FILE), endpoint);
        HttpMetadataStore store = new HttpMetadataStore(endpoint, trust,
                positive(values.getDuration(TIMEOUT), TIMEOUT),
                positive(values.getDuration(CONNECT_TIMEOUT), CONNECT_TIMEOUT),
                positive(values.getDuration(WATCH_HOLD), WATCH_HOLD),
                positive(values.getDuration(WATCH_POLL_INTERVAL), WATCH_POLL_INTERVAL));
        try {
            store.probe();
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        LOG.debug("opened http metadata store {}", endpoint.masked());
        return store;
    }

    private static X509TrustManager trust(String caFile, HttpEndpoint endpoint) {
        if (caFile.isBlank()) {
            return null;
        }
        if (!endpoint.url().isHttps()) {
            throw new ConfigException("metadata.http." + CA_FILE, "is set but " + endpoint.masked()
                    + " is plain http; use https:// to talk TLS");
        }
        try {
            return PemTls.trustManager(Path.of(caFile));
        } catch (IOException | InvalidPathException e) {
            throw new ConfigException("metadata.http." + CA_FILE, e.getMessage(), e);
        }
    }

    private static Duration positive(Duration d, String name) {
        if (d.isZero() || d.isNegative()) {
            throw new ConfigException("metadata.http." + name, "must be positive, got " + d);
        }
        return d;
    }
}
