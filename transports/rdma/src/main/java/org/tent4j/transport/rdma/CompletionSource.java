package org.tent4j.transport.rdma;

/** Where work completions come from: a verbs completion queue, or a scripted source in tests. */
interface CompletionSource {
    /**
     * Moves up to {@link CompletionBatch#capacity()} completions into {@code batch}. Must not block or allocate.
     *
     * @return how many were written, 0 if none; negative if the queue failed (the value is the provider's error)
     */
    int poll(CompletionBatch batch);
}
