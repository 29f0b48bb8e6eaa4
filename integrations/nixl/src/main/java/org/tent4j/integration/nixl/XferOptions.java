package org.tent4j.integration.nixl;

import java.util.List;

/**
 * Per-request choices.
 *
 * @param backends     backend ids to try first, in order (empty: the agent's preference)
 * @param notification bytes the target agent receives after all the data landed, or {@code null} for none
 */
public record XferOptions(List<String> backends, byte[] notification) {
    public static final XferOptions NONE = new XferOptions(List.of(), null);

    public XferOptions {
        backends = List.copyOf(backends);
    }

    public static XferOptions notify(byte[] notification) {
        return new XferOptions(List.of(), notification);
    }

    public static XferOptions backends(String... ids) {
        return new XferOptions(List.of(ids), null);
    }
}
