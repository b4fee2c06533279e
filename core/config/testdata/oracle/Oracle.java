import org.yaml.snakeyaml.*;
import org.yaml.snakeyaml.representer.*;
import org.yaml.snakeyaml.introspector.*;
import org.yaml.snakeyaml.nodes.*;
import java.util.*;
import java.nio.file.*;
import java.nio.charset.StandardCharsets;

public class Oracle {
  public static class Pojo {
    private String jobName; private String cron; private String timeZone; private int shardingTotalCount;
    private String shardingItemParameters; private String jobParameter; private boolean monitorExecution; private boolean failover;
    private boolean misfire; private int maxTimeDiffSeconds = -1; private int reconcileIntervalMinutes; private String jobShardingStrategyType;
    private String jobExecutorThreadPoolSizeProviderType; private String jobErrorHandlerType; private Collection<String> jobListenerTypes = new ArrayList<>();
    private Collection<Object> jobExtraConfigurations = new LinkedList<>();
    private String description; private Properties props = new Properties(); private boolean disabled; private boolean overwrite; private String label; private boolean staticSharding;
    public String getJobName(){return jobName;} public void setJobName(String v){jobName=v;}
    public String getCron(){return cron;} public void setCron(String v){cron=v;}
    public String getTimeZone(){return timeZone;} public void setTimeZone(String v){timeZone=v;}
    public int getShardingTotalCount(){return shardingTotalCount;} public void setShardingTotalCount(int v){shardingTotalCount=v;}
    public String getShardingItemParameters(){return shardingItemParameters;} public void setShardingItemParameters(String v){shardingItemParameters=v;}
    public String getJobParameter(){return jobParameter;} public void setJobParameter(String v){jobParameter=v;}
    public boolean isMonitorExecution(){return monitorExecution;} public void setMonitorExecution(boolean v){monitorExecution=v;}
    public boolean isFailover(){return failover;} public void setFailover(boolean v){failover=v;}
    public boolean isMisfire(){return misfire;} public void setMisfire(boolean v){misfire=v;}
    public int getMaxTimeDiffSeconds(){return maxTimeDiffSeconds;} public void setMaxTimeDiffSeconds(int v){maxTimeDiffSeconds=v;}
    public int getReconcileIntervalMinutes(){return reconcileIntervalMinutes;} public void setReconcileIntervalMinutes(int v){reconcileIntervalMinutes=v;}
    public String getJobShardingStrategyType(){return jobShardingStrategyType;} public void setJobShardingStrategyType(String v){jobShardingStrategyType=v;}
    public String getJobExecutorThreadPoolSizeProviderType(){return jobExecutorThreadPoolSizeProviderType;} public void setJobExecutorThreadPoolSizeProviderType(String v){jobExecutorThreadPoolSizeProviderType=v;}
    public String getJobErrorHandlerType(){return jobErrorHandlerType;} public void setJobErrorHandlerType(String v){jobErrorHandlerType=v;}
    public Collection<String> getJobListenerTypes(){return jobListenerTypes;} public void setJobListenerTypes(Collection<String> v){jobListenerTypes=v;}
    public Collection<Object> getJobExtraConfigurations(){return jobExtraConfigurations;} public void setJobExtraConfigurations(Collection<Object> v){jobExtraConfigurations=v;}
    public String getDescription(){return description;} public void setDescription(String v){description=v;}
    public Properties getProps(){return props;} public void setProps(Properties v){props=v;}
    public boolean isDisabled(){return disabled;} public void setDisabled(boolean v){disabled=v;}
    public boolean isOverwrite(){return overwrite;} public void setOverwrite(boolean v){overwrite=v;}
    public String getLabel(){return label;} public void setLabel(String v){label=v;}
    public boolean isStaticSharding(){return staticSharding;} public void setStaticSharding(boolean v){staticSharding=v;}
  }
  static class Rep extends Representer {
    Rep() { super(new DumperOptions()); }
    @Override protected NodeTuple representJavaBeanProperty(Object b, Property p, Object v, Tag t) {
      if (v == null) return null;
      if (v instanceof Collection && ((Collection<?>) v).isEmpty()) return null;
      if (v instanceof Map && ((Map<?, ?>) v).isEmpty()) return null;
      return super.representJavaBeanProperty(b, p, v, t);
    }
  }
  // stdin: records separated by \u0000. mode "pojo": each record is YAML -> loadAs Pojo -> dump.
  // mode "props": record = keys separated by \u0001 -> Properties in that insertion order -> dump map of key->"v".
  public static void main(String[] a) throws Exception {
    String in = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
    StringBuilder out = new StringBuilder();
    for (String rec : in.split("\u0000", -1)) {
      if (rec.isEmpty()) continue;
      String res;
      try {
        if (a[0].equals("pojo")) {
          Pojo p = new Yaml().loadAs(rec, Pojo.class);
          res = new Yaml(new Rep()).dumpAsMap(p);
        } else {
          Properties props = new Properties();
          for (String k : rec.split("\u0001", -1)) props.setProperty(k, "v");
          Pojo p = new Pojo(); p.setJobName("j"); p.setProps(props);
          res = new Yaml(new Rep()).dumpAsMap(p);
        }
      } catch (Exception e) { res = "ERROR " + e; }
      out.append(res).append('\u0000');
    }
    System.out.write(out.toString().getBytes(StandardCharsets.UTF_8));
    System.out.flush();
  }
}
