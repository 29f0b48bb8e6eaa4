package org.tent4j.runtime.metadata;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.SegmentDescriptor;

/**
 * Descriptors in one or more metadata stores, under {@code tent4j/<cluster>/segments/<name>}. Publishing goes to every
 * store that answers; fetching asks them in order and takes the first answer. A store that fails is skipped with one
 * WARN line (and one INFO line once it answers again), so discovery survives a dead store without a restart.
 */
public final class StoreDirectory implements SegmentDirectory {
    private static final Logger log = LoggerFactory.getLogger(StoreDirectory.class);
    private final List<MetadataStore> stores;
    private final String prefix;
    private final Duration ttl;
    private final Set<String> down = ConcurrentHashMap.newKeySet();

    public StoreDirectory(List<MetadataStore> stores, String cluster, Duration ttl) {
        this.stores = List.copyOf(stores);
        this.prefix = "tent4j/" + cluster + "/segments/";
        this.ttl = ttl;
    }

    public String key(String segmentName) {
        return prefix + segmentName;
    }

    public List<MetadataStore> stores() {
        return stores;
    }

    @Override
    public void publish(SegmentDescriptor descriptor) {
        byte[] value = DescriptorCodec.encode(descriptor);
        int ok = 0;
        TransferException last = null;
        for (MetadataStore s : stores) {
            try {
                s.put(key(descriptor.name()), value, ttl);
                up(s);
                ok++;
            } catch (TransferException e) {
                skip(s, "publish", e);
                last = e;
            }
        }
        if (ok == 0) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "cannot publish segment '" + descriptor.name()
                    + "': no metadata store answered (last: " + last.getMessage() + ")", last);
        }
    }

    @Override
    public SegmentDescriptor fetch(String segmentName) {
        TransferException last = null;
        for (MetadataStore s : stores) {
            try {
                Optional<byte[]> v = s.get(key(segmentName));
                up(s);
                if (v.isPresent()) {
                    return DescriptorCodec.decode(v.get(), s.uri());
                }
            } catch (TransferException e) {
                skip(s, "lookup", e);
                last = e;
            }
        }
        if (last != null && stores.size() == 1) {
            throw new TransferException(ErrorCode.METADATA_UNAVAILABLE, "cannot open segment '" + segmentName + "': "
                    + last.getMessage(), last);
        }
        throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, "segment '" + segmentName + "' is not published in "
                + stores.stream().map(MetadataStore::uri).toList() + (last == null ? "" : " (some stores failed: " + last.getMessage() + ")"));
    }

    private void skip(MetadataStore s, String what, TransferException e) {
        if (down.add(s.uri())) {
            log.warn("metadata store {} skipped for {}: {}", s.uri(), what, e.getMessage());
        }
    }

    private void up(MetadataStore s) {
        if (!down.isEmpty() && down.remove(s.uri())) {
            log.info("metadata store {} answers again", s.uri());
        }
    }

    @Override
    public void unpublish(String segmentName) {
        for (MetadataStore s : stores) {
            try {
                s.delete(key(segmentName));
            } catch (TransferException e) {
                log.debug("cannot remove {} from {}: {}", segmentName, s.uri(), e.getMessage());
            }
        }
    }

    @Override
    public void close() {
        for (MetadataStore s : stores) {
            s.close();
        }
    }

}
