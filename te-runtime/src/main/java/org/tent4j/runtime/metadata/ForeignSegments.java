package org.tent4j.runtime.metadata;

import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.Function;

import org.tent4j.api.ErrorCode;
import org.tent4j.api.TransferException;
import org.tent4j.spi.SegmentDescriptor;

/**
 * The engine's directory, and after it the transports that name segments in a foreign protocol's terms
 * ({@link org.tent4j.spi.Transport#resolveSegment}): a name the directory answers UNKNOWN_SEGMENT for is offered to
 * them, so that {@code openSegment("<a Mooncake segment>")} works without the runtime naming any plugin. Only the
 * directory's own miss falls through: a store that is down (METADATA_UNAVAILABLE) stays an error, so an outage never
 * turns a tent4j segment into a foreign one.
 */
public final class ForeignSegments implements SegmentDirectory {
    private final SegmentDirectory directory;
    private final Function<String, Optional<SegmentDescriptor>> foreign;

    public ForeignSegments(SegmentDirectory directory, Function<String, Optional<SegmentDescriptor>> foreign) {
        this.directory = directory;
        this.foreign = foreign;
    }

    @Override
    public SegmentDescriptor fetch(String segmentName) {
        try {
            return directory.fetch(segmentName);
        } catch (TransferException e) {
            if (e.code() != ErrorCode.UNKNOWN_SEGMENT) {
                throw e;
            }
            Optional<SegmentDescriptor> d;
            try {
                d = foreign.apply(segmentName);
            } catch (TransferException refused) {
                if (refused.code() == ErrorCode.UNKNOWN_SEGMENT) {
                    // absent both here and there: say both
                    throw new TransferException(ErrorCode.UNKNOWN_SEGMENT, e.getMessage() + "; " + refused.getMessage(), refused);
                }
                refused.addSuppressed(e);
                throw refused;
            }
            SegmentDescriptor found = d.orElseThrow(() -> e);
            if (!found.name().equals(segmentName)) {
                throw new TransferException(ErrorCode.INTERNAL, "segment '" + segmentName + "' resolved to a descriptor of '"
                        + found.name() + "'");
            }
            return found;
        }
    }

    @Override
    public void publish(SegmentDescriptor descriptor) {
        directory.publish(descriptor);
    }

    @Override
    public AutoCloseable watch(String segmentName, Consumer<SegmentDescriptor> listener) {
        return directory.watch(segmentName, listener);
    }

    @Override
    public void unpublish(String segmentName) {
        directory.unpublish(segmentName);
    }

    @Override
    public void close() {
        // the directory is the engine's; it closes it
    }
}
