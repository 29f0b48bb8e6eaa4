package org.tent4j.metadata.http;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;

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
 * Mooncake (its Go and Python servers serve {@code /metadata}; so does {@link HttpMetadataServer}).
 */
public final class HttpMetadataStoreProvider implements MetadataStoreProvider {
    private static final Logger LOG = LoggerFactory.getLogger(HttpMetadataStoreProvider.class);
    static final String TIMEOUT = "timeout";
    static final String CONNECT_TIMEOUT = "connect-timeout";
    static final String WATCH_HOLD = "watch-hold";
    static final String WATCH_POLL_INTERVAL = "watch-poll-interval";

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of(TIMEOUT, OptionSpec.Type.DURATION, "3s",
                    "how long one GET, PUT or DELETE may take (Mooncake uses 3 s)"),
            OptionSpec.of(CONNECT_TIMEOUT, OptionSpec.Type.DURATION, "1500ms",
                    "TCP connect timeout (Mooncake uses 1.5 s)"),
            OptionSpec.of(WATCH_HOLD, OptionSpec.Type.DURATION, "25s",
                    "how long a tent4j server may hold one long-poll watch request open"),
            OptionSpec.of(WATCH_POLL_INTERVAL, OptionSpec.Type.DURATION, "1s",
                    "how often a watched key is read from a plain (Mooncake) server, which has no watch endpoint"));

    @Override
    public List<String> schemes() {
        return List.of("http");
    }

    @Override
    public String description() {
        return "HTTP metadata server (Mooncake protocol + tent4j TTL/watch): http://host:port/path";
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
        HttpMetadataStore store = new HttpMetadataStore(endpoint,
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

    private static Duration positive(Duration d, String name) {
        if (d.isZero() || d.isNegative()) {
            throw new ConfigException("metadata.http." + name, "must be positive, got " + d);
        }
        return d;
    }
}
