// CuratorLatch runs Apache Curator's LeaderLatch for the interop test.
// Usage: java CuratorLatch CONNECT NAMESPACE LATCHPATH ID
// Prints "STARTED", then "LEADER" once it holds the latch; on the stdin line
// "release" it closes the latch and prints "RELEASED"; on EOF it exits.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorLatch {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0]).namespace(args[1])
                .sessionTimeoutMs(4000).connectionTimeoutMs(4000)
                .retryPolicy(new ExponentialBackoffRetry(100, 3)).build();
        client.start();
        client.blockUntilConnected();
        LeaderLatch latch = new LeaderLatch(client, args[2], args[3]);
        latch.start();
        System.out.println("STARTED");
        System.out.flush();
        Thread waiter = new Thread(() -> {
            try {
                latch.await();
                System.out.println("LEADER");
                System.out.flush();
            } catch (Exception e) {
                // closed before leadership
            }
        });
        waiter.setDaemon(true);
        waiter.start();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("release")) {
                latch.close();
                System.out.println("RELEASED");
                System.out.flush();
            }
        }
        client.close();
    }
}
