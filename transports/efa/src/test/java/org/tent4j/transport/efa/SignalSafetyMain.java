package org.tent4j.transport.efa;

/**
 * Child JVM for {@link EfaUnitTest}: loads libfabric (which maps libpsm2 and its signal handlers), then throws and
 * catches NullPointerExceptions in hot compiled code, which HotSpot implements with SIGSEGV. Prints "survived" only
 * if the JVM's own handler still runs.
 */
public final class SignalSafetyMain {
    private SignalSafetyMain() {
    }

    public static void main(String[] args) throws Exception {
        LibFabric.load();
        Object[] holes = new Object[4096];
        long caught = 0;
        for (int round = 0; round < 500; round++) {
            for (Object o : holes) {
                try {
                    caught += o.hashCode();
                } catch (NullPointerException e) {
                    caught++;
                }
            }
        }
        System.out.println(ChildJvm.PREFIX + "survived " + caught);
    }
}
