package org.tent4j.runtime;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.MetadataNamespace;
import org.tent4j.api.TransferException;
import org.tent4j.runtime.control.ControlPlaneNode;
import org.tent4j.runtime.metadata.DescriptorCodec;
import org.tent4j.runtime.metadata.SegmentDirectory;
import org.tent4j.runtime.metadata.StoreDirectory;
import org.tent4j.spi.SegmentDescriptor;

/**
 * Metadata for consumers that exchange it themselves: the engine's descriptor as a versioned blob, blobs offered on
 * the control plane by label, and namespaced keys in the metadata stores.
 *
 * <p>A segment blob is {@code "T4SB"}, a big-endian u16 format version ({@value #BLOB_VERSION}), then the descriptor
 * in the JSON of {@link DescriptorCodec}. Blobs come from peers, so every one is checked (size, magic, version, JSON)
 * before use and a bad one fails naming what is wrong.
 */
final class MetadataExchange {
    static final String SERVICE = "blob.get";
    static final int BLOB_VERSION = 1;
    private static final byte[] MAGIC = {'T', '4', 'S', 'B'};
    private static final Pattern LABEL = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    private static final Pattern KEY = Pattern.compile("[A-Za-z0-9._/-]{1,256}");

    private final String segmentName;
    private final ControlPlaneNode control;
    private final SegmentDirectory directory;
    private final Map<String, Supplier<byte[]>> offered = new ConcurrentHashMap<>();

    MetadataExchange(String segmentName, ControlPlaneNode control, SegmentDirectory directory, Supplier<SegmentDescriptor> own) {
        this.segmentName = segmentName;
        this.control = control;
        this.directory = directory;
        offered.put(org.tent4j.api.TransferEngine.SEGMENT_BLOB, () -> encode(own.get()));
        control.serve(SERVICE, (caller, request) -> answer(new String(request, StandardCharsets.UTF_8)));
    }

    static byte[] encode(SegmentDescriptor d) {
        byte[] json = DescriptorCodec.encode(d);
        return ByteBuffer.allocate(MAGIC.length + 2 + json.length).put(MAGIC).putShort((short) BLOB_VERSION).put(json).array();
    }

    static SegmentDescriptor decode(byte[] blob) {
        if (blob == null || blob.length < MAGIC.length + 2) {
            throw invalid("segment blob of " + (blob == null ? "null" : blob.length + " bytes") + " is too short to be one");
        }
        if (blob.length > MetadataNamespace.MAX_VALUE) {
            throw invalid("segment blob of " + blob.length + " bytes exceeds " + MetadataNamespace.MAX_VALUE);
        }
        if (!Arrays.equals(blob, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
            throw invalid("not a segment blob (it does not start with T4SB)");
        }
        int version = ((blob[4] & 0xff) << 8) | (blob[5] & 0xff);
        if (version != BLOB_VERSION) {
            throw invalid("segment blob format version " + version + " is not supported (this engine reads " + BLOB_VERSION + ")");
        }
        try {
            return DescriptorCodec.decode(Arrays.copyOfRange(blob, MAGIC.length + 2, blob.length), "segment blob");
        } catch (TransferException e) {
            throw new TransferException(ErrorCode.INVALID_ARGUMENT, e.getMessage(), e);
        }
    }

    void offer(String label, Supplier<byte[]> blob) {
        checkLabel(label);
        if (label.equals(org.tent4j.api.TransferEngine.SEGMENT_BLOB)) {
            throw invalid("label '" + label + "' is the engine's own segment blob");
        }
        if (blob == null) {
            offered.remove(label);
        } else {
            offered.put(label, blob);
        }
    }

    private byte[] answer(String label) {
        Supplier<byte[]> s = label.length() <= 64 ? offered.get(label) : null;
        if (s == null) {
            throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "segment '" + segmentName + "' offers no blob under label '"
                    + (label.length() <= 64 ? label : label.substring(0, 64) + "...") + "'");
        }
        byte[] b = s.get();
        if (b == null || b.length > MetadataNamespace.MAX_VALUE) {
            throw new TransferException(ErrorCode.INTERNAL, "blob under label '" + label + "' is "
                    + (b == null ? "null" : b.length + " bytes, more than " + MetadataNamespace.MAX_VALUE));
        }
        return b;
    }

    byte[] fetch(String host, int port, String label, Duration timeout) {
        checkLabel(label);
        if (host == null || host.isEmpty() || port <= 0 || port > 65535) {
            throw invalid("peer address '" + host + ":" + port + "' is not host:port");
        }
        return control.call(host, port, SERVICE, label.getBytes(StandardCharsets.UTF_8), timeout);
    }

    MetadataNamespace namespace(String name) {
        checkLabel(name);
        if (!(directory instanceof StoreDirectory stores)) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "metadata namespace '" + name
                    + "' needs a metadata store, but this engine runs with metadata.uri=p2p (no store); configure etcd://, redis://, http:// or memory://");
        }
        return new Namespace(name, stores, stores.clusterPrefix() + "ns/" + name + "/");
    }

    private static void checkLabel(String label) {
        if (label == null || !LABEL.matcher(label).matches()) {
            throw invalid("label '" + label + "' must be 1 to 64 characters of [A-Za-z0-9._-]");
        }
    }

    private static TransferException invalid(String message) {
        return new TransferException(ErrorCode.INVALID_ARGUMENT, message);
    }

    private record Namespace(String name, StoreDirectory stores, String prefix) implements MetadataNamespace {
        private String key(String key) {
            if (key == null || !KEY.matcher(key).matches() || key.contains("..")) {
                throw invalid("key '" + key + "' in namespace '" + name + "' must be 1 to 256 characters of [A-Za-z0-9._/-] without '..'");
            }
            return prefix + key;
        }

        @Override
        public void put(String key, byte[] value, Duration ttl) {
            String k = key(key);
            if (value == null || value.length > MAX_VALUE) {
                throw invalid("value of key '" + key + "' in namespace '" + name + "' is "
                        + (value == null ? "null" : value.length + " bytes, more than " + MAX_VALUE));
            }
            if (ttl == null || ttl.isNegative()) {
                throw invalid("ttl of key '" + key + "' must be zero (no expiry) or positive, got " + ttl);
            }
            stores.put(k, value, ttl, "put key '" + key + "' in namespace '" + name + "'");
        }

        @Override
        public Optional<byte[]> get(String key) {
            return stores.get(key(key), "get key '" + key + "' in namespace '" + name + "'");
        }

        @Override
        public byte[] await(String key, Duration timeout) {
            String k = key(key);
            CompletableFuture<byte[]> appeared = new CompletableFuture<>();
            // watch first, then read: a put between the two is seen by one of them
            try (AutoCloseable watch = stores.watchKey(k, (changed, value) -> {
                if (value != null) {
                    appeared.complete(value);
                }
            })) {
                Optional<byte[]> now = get(key);
                if (now.isPresent()) {
                    return now.get();
                }
                return appeared.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                throw new TransferException(ErrorCode.TIMEOUT, "key '" + key + "' did not appear in namespace '" + name
                        + "' within " + timeout.toMillis() + " ms");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransferException(ErrorCode.CANCELED, "interrupted while waiting for key '" + key + "' in namespace '" + name + "'");
            } catch (ExecutionException e) {
                throw new TransferException(ErrorCode.INTERNAL, "watch of key '" + key + "' failed: " + e.getCause(), e.getCause());
            } catch (TransferException e) {
                throw e;
            } catch (Exception e) {
                throw new TransferException(ErrorCode.INTERNAL, "closing the watch of key '" + key + "' failed: " + e, e);
            }
        }

        @Override
        public boolean delete(String key) {
            return stores.delete(key(key));
        }
    }
}
