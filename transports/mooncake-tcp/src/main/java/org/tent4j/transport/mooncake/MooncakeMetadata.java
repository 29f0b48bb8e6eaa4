package org.tent4j.transport.mooncake;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.function.BiFunction;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;

/**
 * A Mooncake metadata store, spoken the way a Mooncake engine speaks it, so that both find each other's segments:
 * keys from {@link MooncakeKeys}, values Mooncake's compact JSON, no TTL (Mooncake sets none).
 *
 * <p>Mooncake's HTTP metadata server ({@code http://host:port/path}: {@code GET/PUT/DELETE <endpoint>?key=<url-escaped
 * key>}, 200 with the value, 404 when absent) is spoken here, with Mooncake's timeouts (1.5 s to connect, 3 s in
 * all). etcd and Redis are reached through the engine's own metadata plugins
 * ({@link org.tent4j.spi.TransportContext#openMetadataStore}), whose {@code get}/{@code put}/{@code delete} are
 * Mooncake's verbs there (etcd Get/Put without a lease, Redis GET/SET/DEL), so this plugin needs no client of its own.
 */
public final class MooncakeMetadata implements AutoCloseable {
    static final Duration CONNECT_TIMEOUT = Duration.ofMillis(1500);
    static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(3);

    /** Mooncake's connection string for "no store: peers ask each other's handshake socket". */
    public static final String P2P = "P2PHANDSHAKE";

    /** The three verbs Mooncake uses on any of its stores. */
    private interface Keys extends AutoCloseable {
        Optional<byte[]> get(String key);

        void put(String key, byte[] value);

        void delete(String key);

        @Override
        void close();
    }

    private final String endpoint;
    private final String clusterId;
    private final Keys keys;

    private MooncakeMetadata(String endpoint, String clusterId, Keys keys) {
        this.endpoint = endpoint;
        this.clusterId = clusterId == null ? "" : clusterId;
        this.keys = keys;
    }

    /**
     * Opens Mooncake's HTTP metadata server.
     *
     * @param connection {@code http://host:port/path}, the whole URL being the endpoint as in Mooncake
     * @param clusterId  Mooncake's {@code MC_METADATA_CLUSTER_ID}, or empty
     * @throws TransferException INVALID_ARGUMENT for anything else, naming why
     */
    public static MooncakeMetadata open(String connection, String clusterId) {
        return open(connection, clusterId, (c, u) -> {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake metadata '" + c + "': etcd:// and "
                    + "redis:// are opened through an engine's metadata plugins (transports.mooncake-tcp.metadata)");
        });
    }

    /**
     * Opens a store by Mooncake's connection string: {@code http://...} spoken here, {@code etcd://} and
     * {@code redis://} opened by {@code engineStores} (the engine's plugins; this object closes what they open).
     *
     * @throws TransferException INVALID_ARGUMENT for a connection string that names no store ({@value #P2P} included:
     *                           P2P peers are asked over their handshake socket, see {@link MooncakeSegmentDescriptor#fetchP2p})
     */
    public static MooncakeMetadata open(String connection, String clusterId,
                                        BiFunction<String, URI, MetadataStore> engineStores) {
        URI uri;
        try {
            uri = URI.create(connection);
        } catch (IllegalArgumentException e) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake metadata '" + connection
                    + "' is not a URL: " + e.getMessage());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme();
        switch (scheme) {
            case "http" -> {
                if (uri.getHost() == null) {
                    throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake metadata '" + connection
                            + "' names no host");
                }
                return new MooncakeMetadata(connection, clusterId, new HttpKeys(uri));
            }
            case "etcd", "redis" -> {
                MetadataStore store = engineStores.apply(connection, uri);
                return new MooncakeMetadata(store.uri(), clusterId, new StoreKeys(store));
            }
            default -> throw new TransferException(ErrorCode.INVALID_ARGUMENT, "Mooncake metadata '" + connection
                    + "': expected Mooncake's http://host:port/path, etcd://host:port or redis://host:port"
                    + (connection.equals(P2P) ? " (" + P2P + " has no store: peers are asked over their handshake socket)" : ""));
        }
    }

    /** The store, password masked, for messages. */
    public String endpoint() {
        return endpoint;
    }

    /** The descriptor of Mooncake segment {@code name}. UNKNOWN_SEGMENT when absent; errors name the key. */
    public MooncakeSegmentDescriptor segment(String name) {
        String key = MooncakeKeys.segmentKey(clusterId, name);
        return MooncakeSegmentDescriptor.parse(endpoint + " key " + key, require(key, name));
    }

    /** Where Mooncake server {@code name}'s handshake socket, and its data host, are. */
    public MooncakeKeys.RpcMeta rpcMeta(String name) {
        String key = MooncakeKeys.rpcMetaKey(clusterId, name);
        return MooncakeKeys.parseRpcMeta(endpoint + " key " + key, require(key, name));
    }

    /** Publishes a segment as a Mooncake engine does: its descriptor, and its rpc_meta. */
    public void publish(MooncakeSegmentDescriptor descriptor, MooncakeKeys.RpcMeta where) {
        keys.put(MooncakeKeys.segmentKey(clusterId, descriptor.name()), descriptor.toJson().getBytes(StandardCharsets.UTF_8));
        keys.put(MooncakeKeys.rpcMetaKey(clusterId, descriptor.name()), where.toJson().getBytes(StandardCharsets.UTF_8));
    }

    /** Removes both keys of a segment, as Mooncake's {@code freeEngine} does. */
    public void remove(String name) {
        keys.delete(MooncakeKeys.segmentKey(clusterId, name));
        keys.delete(MooncakeKeys.rpcMetaKey(clusterId, name));
    }

    /** Stops the HTTP client's threads, or closes the engine store opened for this. */
    @Override
    public void close() {
        keys.close();
    }

    private byte[] require(String key, String name) {
        return keys.get(key).orElseThrow(() -> new TransferException(ErrorCode.UNKNOWN_SEGMENT, "no Mooncake segment '"
                + name + "': key " + key + " is absent at " + endpoint));
    }

    /** A store of the engine's, whose verbs are Mooncake's there. */
    private record StoreKeys(MetadataStore store) implements Keys {
        @Override
        public Optional<byte[]> get(String key) {
            return store.get(key);
        }

        @Override
        public void put(String key, byte[] value) {
            store.put(key, value, Duration.ZERO);
        }

        @Override
        public void delete(String key) {
            store.delete(key);
        }

        @Override
        public void close() {
            store.close();
        }
    }

    /** Mooncake's HTTP metadata server. */
    private static final class HttpKeys implements Keys {
        private final URI endpoint;
        private final HttpClient http = HttpClient.newBuilder().connectTimeout(CONNECT_TIMEOUT).build();

        HttpKeys(URI endpoint) {
            this.endpoint = endpoint;
        }

        @Override
        public void close() {
            http.close();
        }

        @Override
        public Optional<byte[]> get(String key) {
            HttpResponse<byte[]> r = send(HttpRequest.newBuilder(at(key)).GET(), key);
            if (r.statusCode() == 404) {
                return Optional.empty();
            }
            expect200(r, "GET", key);
            return Optional.of(r.body());
        }

        @Override
        public void put(String key, byte[] json) {
            expect200(send(HttpRequest.newBuilder(at(key)).header("Content-Type", "application/json")
                    .PUT(HttpRequest.BodyPublishers.ofByteArray(json)), key), "PUT", key);
        }

        @Override
        public void delete(String key) {
            HttpResponse<byte[]> r = send(HttpRequest.newBuilder(at(key)).DELETE(), key);
            if (r.statusCode() != 404) {
                expect200(r, "DELETE", key);
            }
        }

        private URI at(String key) {
            String query = "key=" + URLEncoder.encode(key, StandardCharsets.UTF_8);
            String base = endpoint.toString();
            return URI.create(base + (endpoint.getRawQuery() == null ? "?" : "&") + query);
        }

        private HttpResponse<byte[]> send(HttpRequest.Builder request, String key) {
            try {
                return http.send(request.timeout(REQUEST_TIMEOUT).build(), HttpResponse.BodyHandlers.ofByteArray());
            } catch (IOException e) {
                throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "Mooncake metadata " + endpoint
                        + " unreachable for key " + key + ": " + e, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "interrupted asking Mooncake metadata "
                        + endpoint + " for key " + key, e);
            }
        }

        private void expect200(HttpResponse<byte[]> r, String verb, String key) {
            if (r.statusCode() != 200) {
                String body = new String(r.body(), 0, Math.min(r.body().length, 200), StandardCharsets.UTF_8);
                throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "Mooncake metadata " + endpoint + ": " + verb
                        + " of key " + key + " answered HTTP " + r.statusCode() + " (" + body.strip() + ")");
            }
        }
    }
}
