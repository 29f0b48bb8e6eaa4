package org.tent4j.metadata.redis;

import java.io.IOException;
import java.net.URI;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.net.ssl.SSLSocketFactory;

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
 * Metadata stores on Redis: {@code redis://[[user]:password@]host[:port][/db]}; {@code rediss://} talks TLS (the
 * certificate must name the host dialled), trusting the JDK's CAs or those of {@code metadata.redis.ca-file}.
 */
public final class RedisMetadataStoreProvider implements MetadataStoreProvider {
    private static final Logger LOG = LoggerFactory.getLogger(RedisMetadataStoreProvider.class);
    static final String TIMEOUT = "timeout";
    static final String CONNECT_TIMEOUT = "connect-timeout";
    static final String POOL_SIZE = "pool-size";
    static final String KEYSPACE_NOTIFICATIONS = "keyspace-notifications";
    static final String WATCH_POLL_INTERVAL = "watch-poll-interval";
    static final String CA_FILE = "ca-file";

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of(TIMEOUT, OptionSpec.Type.DURATION, "5s",
                    "socket read timeout of one command; a slower answer fails with METADATA_UNAVAILABLE"),
            OptionSpec.of(CONNECT_TIMEOUT, OptionSpec.Type.DURATION, "3s",
                    "TCP connect timeout, also how long open() may take to reach the server"),
            OptionSpec.of(POOL_SIZE, OptionSpec.Type.INT, 8, "most connections used for commands at once"),
            OptionSpec.of(KEYSPACE_NOTIFICATIONS, OptionSpec.Type.BOOLEAN, true,
                    "watch through keyspace notifications (turned on with CONFIG SET when needed); false polls"),
            OptionSpec.of(WATCH_POLL_INTERVAL, OptionSpec.Type.DURATION, "500ms",
                    "how often watched keys are read when notifications cannot be used"),
            OptionSpec.of(CA_FILE, OptionSpec.Type.STRING, "",
                    "rediss:// only: PEM file of the CA certificate(s) to trust instead of the JDK's default ones"));

    @Override
    public List<String> schemes() {
        return List.of("redis", "rediss");
    }

    @Override
    public String description() {
        return "Redis (Jedis): redis://[user:password@]host:port[/db], rediss:// for TLS";
    }

    @Override
    public List<OptionSpec> options() {
        return OPTIONS;
    }

    @Override
    public MetadataStore open(URI uri, Map<String, String> options) {
        if (uri == null) {
            throw new TransferException(ErrorCode.CONFIG, "redis metadata URI is missing");
        }
        RedisAddress address = RedisAddress.parse(uri);
        OptionValues values = OptionValues.parse("metadata.redis.", OPTIONS, options == null ? Map.of() : options);
        int poolSize = values.getInt(POOL_SIZE);
        if (poolSize < 1) {
            throw new ConfigException("metadata.redis." + POOL_SIZE, "must be at least 1, got " + poolSize);
        }
        SSLSocketFactory tls = tls(values.getString(CA_FILE), address);
        RedisMetadataStore store = new RedisMetadataStore(address, tls,
                positive(values.getDuration(TIMEOUT), TIMEOUT),
                positive(values.getDuration(CONNECT_TIMEOUT), CONNECT_TIMEOUT),
                poolSize,
                positive(values.getDuration(WATCH_POLL_INTERVAL), WATCH_POLL_INTERVAL),
                values.getBoolean(KEYSPACE_NOTIFICATIONS));
        try {
            store.probe();
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        LOG.debug("opened redis metadata store {}", address.masked());
        return store;
    }

    /** The CAs of {@code caFile} as a socket factory; {@code null} (the JDK's CAs) when none is given. */
    private static SSLSocketFactory tls(String caFile, RedisAddress address) {
        if (caFile.isBlank()) {
            return null;
        }
        if (!address.tls()) {
            throw new ConfigException("metadata.redis." + CA_FILE, "is set but " + address.masked()
                    + " is plain redis://; use rediss:// to talk TLS");
        }
        try {
            return PemTrust.socketFactory(Path.of(caFile));
        } catch (IOException | InvalidPathException e) {
            throw new ConfigException("metadata.redis." + CA_FILE, e.getMessage(), e);
        }
    }

    private static Duration positive(Duration d, String name) {
        if (d.isZero() || d.isNegative()) {
            throw new ConfigException("metadata.redis." + name, "must be positive, got " + d);
        }
        return d;
    }
}
