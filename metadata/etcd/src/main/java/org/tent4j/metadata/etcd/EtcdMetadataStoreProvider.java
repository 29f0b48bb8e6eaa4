package org.tent4j.metadata.etcd;

import java.io.File;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.net.ssl.SSLException;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;

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
 * Metadata stores on etcd v3: {@code etcd://[user:password@]host1:port1[,host2:port2...]}. Endpoints may be
 * separated by ',' or ';' as in Mooncake; the port defaults to 2379. {@code etcds://} talks TLS (gRPC checks that the
 * certificate names the host dialled), trusting the JDK's CAs or those of {@code metadata.etcd.ca-file}.
 */
public final class EtcdMetadataStoreProvider implements MetadataStoreProvider {
    private static final Logger LOG = LoggerFactory.getLogger(EtcdMetadataStoreProvider.class);
    static final String TIMEOUT = "timeout";
    static final String CONNECT_TIMEOUT = "connect-timeout";
    static final String CA_FILE = "ca-file";
    /** Mooncake's cap; etcd itself accepts requests up to 1.5 MiB unless started with --max-request-bytes. */
    private static final int MAX_MESSAGE_BYTES = 32 << 20;

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of(TIMEOUT, OptionSpec.Type.DURATION, "5s",
                    "how long one get, put, delete or lease call may take before it fails with METADATA_UNAVAILABLE"),
            OptionSpec.of(CONNECT_TIMEOUT, OptionSpec.Type.DURATION, "5s",
                    "how long open() waits for etcd to answer a probe read (Mooncake dials etcd for 5 s)"),
            OptionSpec.of(CA_FILE, OptionSpec.Type.STRING, "",
                    "etcds:// only: PEM file of the CA certificate(s) to trust instead of the JDK's default ones"));

    @Override
    public List<String> schemes() {
        return List.of("etcd", "etcds");
    }

    @Override
    public String description() {
        return "etcd v3 (jetcd): etcd://[user:password@]host:port[,host:port...], etcds:// for TLS";
    }

    @Override
    public List<OptionSpec> options() {
        return OPTIONS;
    }

    @Override
    public MetadataStore open(URI uri, Map<String, String> options) {
        if (uri == null) {
            throw new TransferException(ErrorCode.CONFIG, "etcd metadata URI is missing");
        }
        EtcdAddress address = EtcdAddress.parse(uri);
        OptionValues values = OptionValues.parse("metadata.etcd.", OPTIONS, options == null ? Map.of() : options);
        Duration timeout = positive(values.getDuration(TIMEOUT), TIMEOUT);
        Duration connectTimeout = positive(values.getDuration(CONNECT_TIMEOUT), CONNECT_TIMEOUT);
        ClientBuilder builder = Client.builder()
                .endpoints(address.endpoints().toArray(String[]::new))
                .connectTimeout(connectTimeout)
                // no hidden retries: a call this store reported as failed must not be applied later
                .retryMaxAttempts(0)
                .retryMaxDuration(timeout)
                .interceptor(new UnaryDeadline(timeout))
                .maxInboundMessageSize(MAX_MESSAGE_BYTES)
                .keepaliveTime(Duration.ofSeconds(10))
                .keepaliveTimeout(Duration.ofSeconds(5));
        String caFile = values.getString(CA_FILE);
        if (!caFile.isBlank() && !address.tls()) {
            throw new ConfigException("metadata.etcd." + CA_FILE, "is set but " + address.masked()
                    + " is plain etcd://; use etcds:// to talk TLS");
        }
        if (address.tls()) {
            try {
                builder.sslContext(tls -> {
                    if (!caFile.isBlank()) {
                        tls.trustManager(new File(caFile));
                    }
                });
            } catch (SSLException | IllegalArgumentException e) {
                throw new ConfigException("metadata.etcd." + CA_FILE, "cannot trust the CA certificates in '"
                        + caFile + "': " + e.getMessage(), e);
            }
        }
        if (address.user() != null) {
            builder.user(ByteSequence.from(address.user().getBytes(java.nio.charset.StandardCharsets.UTF_8)))
                    .password(ByteSequence.from(address.password().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        }
        Client client;
        try {
            client = builder.build();
        } catch (RuntimeException e) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "etcd metadata store " + address.masked()
                    + ": cannot create the client: " + EtcdMetadataStore.describe(e), e);
        }
        EtcdMetadataStore store = new EtcdMetadataStore(address, client, timeout);
        try {
            store.probe(connectTimeout);
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
        LOG.debug("opened etcd metadata store {}", address.masked());
        return store;
    }

    private static Duration positive(Duration d, String name) {
        if (d.isZero() || d.isNegative()) {
            throw new org.tent4j.api.ConfigException("metadata.etcd." + name, "must be positive, got " + d);
        }
        return d;
    }
}
