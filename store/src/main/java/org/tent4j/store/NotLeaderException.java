package org.tent4j.store;

/**
 * {@link StoreError#NOT_LEADER}: the master asked is not its group's leader and applied nothing; {@link #leader()}
 * is the leader's store RPC address when that master knows it.
 */
public final class NotLeaderException extends StoreException {
    private final String leader;

    public NotLeaderException(String message, String leader) {
        super(StoreError.NOT_LEADER, message);
        this.leader = leader;
    }

    /** The leader's store RPC address ({@code host:port}); null when the refusing master knows no leader. */
    public String leader() {
        return leader;
    }
}
