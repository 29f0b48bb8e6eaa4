package org.tent4j.integration.nixl;

import java.util.List;

/**
 * Per-request choices.
 *
 * @param backends     backend ids to try first, in order (empty: the agent's preference)
 * @param notification bytes the target agent receives after all the data landed, or {@code null} for none
 * @param skipMerge    keep every entry of {@link Agent#makeXferReq} as its own descriptor even where neighbours are
 *                     contiguous on both sides (NIXL's {@code skipDescMerge})
 */
public record XferOptions(List<String> backends, byte[] notification, boolean skipMerge) {
    public static final XferOptions NONE = new XferOptions(List.of(), null, false);

    public XferOptions {
        backends = List.copyOf(backends);
    }

    public static XferOptions notify(byte[] notification) {
        return new XferOptions(List.of(), notification, false);
    }

    public static XferOptions backends(String... ids) {
        return new XferOptions(List.of(ids), null, false);
    }

    public XferOptions withoutMerging() {
        return new XferOptions(backends, notification, true);
    }
}
