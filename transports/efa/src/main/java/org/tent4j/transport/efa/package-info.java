/**
 * The {@code efa} transport: one-sided READ/WRITE over libfabric {@code FI_EP_RDM} endpoints with {@code FI_RMA},
 * bound through java.lang.foreign with no C shim and no JNI. In production the provider is {@code efa}; on machines
 * without EFA the same code runs over libfabric's software providers ({@code tcp;ofi_rxm}, {@code sockets},
 * {@code shm}), which is how it is tested.
 *
 * <h2>Bindings</h2>
 * {@link org.tent4j.transport.efa.LibFabric} binds the few functions libfabric exports; everything else in the API is
 * {@code static inline} code calling through ops tables, so it is called as a function pointer read out of the object
 * ({@code LibFabric.slot}) through one address-taking downcall handle per C signature. Pointers are resolved once per
 * object ({@link org.tent4j.transport.efa.Fabric}). Every layout, offset and constant is in
 * {@link org.tent4j.transport.efa.FiAbi}, which {@code FiAbiTest} checks against the installed headers with a compiled
 * {@code offsetof} program. Loading libfabric is wrapped by {@link org.tent4j.transport.efa.SignalHandlers}: Debian's
 * libfabric links libpsm2, whose constructor replaces the JVM's SIGSEGV/SIGBUS/SIGILL handlers, which would turn the
 * next NullPointerException in compiled code into a process crash.
 *
 * <h2>Endpoint</h2>
 * {@code fi_getinfo} hints (see {@link org.tent4j.transport.efa.FabricInfo}): RDM, RMA, {@code FI_DELIVERY_COMPLETE}
 * as the default transmit flag (a WRITE completes only when its bytes are visible at the target: with
 * {@code tcp;ofi_rxm} the default completion arrives earlier), {@code FI_THREAD_SAFE}, {@code FI_AV_TABLE}, mode
 * {@code FI_CONTEXT|FI_CONTEXT2}, and mr_mode {@code LOCAL|VIRT_ADDR|ALLOCATED|PROV_KEY}, each of which
 * {@link org.tent4j.transport.efa.MrMode} honours. One CQ ({@code FI_CQ_FORMAT_DATA}) and one AV serve all of a
 * transport's endpoints.
 *
 * <h2>Data path</h2>
 * A post checks the slice against the peer's published buffer (bounds, key, permission) and this engine's
 * registrations, fills a preallocated {@link org.tent4j.transport.efa.OpSlot} and queues it. The one
 * {@link org.tent4j.transport.efa.FabricProgress} thread per transport posts fi_write/fi_read (the slot's 64-byte
 * {@code fi_context2} is the operation context, so a completion maps back to its slice by address arithmetic),
 * reissues operations refused with {@code -FI_EAGAIN}, reads the CQ (which also drives manual progress, on the target
 * side too), enforces deadlines and backs off when idle. Nothing is allocated per slice unless every slot is busy.
 *
 * <h2>Known provider behaviour (libfabric 1.17)</h2>
 * A target that refuses an access (wrong key, outside the region, no permission): {@code tcp;ofi_rxm} drops the
 * connection, so the operation completes with {@code -FI_ECANCELED} (PEER_FAILED) and the next one reconnects;
 * {@code shm} drops the command without answering, so only the slice's deadline ends it (TIMEOUT) and that pair of
 * endpoints stays wedged. With both endpoints in one process, {@code sockets} and {@code shm} crash inside libfabric
 * when the peer endpoint has been closed.
 */
package org.tent4j.transport.efa;
