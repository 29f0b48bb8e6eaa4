package org.tent4j.api;

/**
 * A small message from a peer. When it rides on a batch, it is delivered after every byte of that batch has
 * landed at the receiver.
 *
 * @param sender  segment name of the sending engine
 * @param message the text (at most {@link #MAX_MESSAGE_BYTES} bytes in UTF-8)
 */
public record Notification(String sender, String message) {
    public static final int MAX_MESSAGE_BYTES = 64 * 1024;
}
