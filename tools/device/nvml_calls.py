# nvml_calls.py — how long each NVML read pflex makes per sample takes on this machine's GPU 0:
# 20 calls each, median and max in ms.  Reads only (nothing set).  python3 tools/device/nvml_calls.py
import ctypes as C,time,statistics as S
n=C.CDLL("libnvidia-ml.so.1");n.nvmlInit_v2();d=C.c_void_p();n.nvmlDeviceGetHandleByIndex_v2(0,C.byref(d))
u=C.c_uint();e=C.c_ulonglong();ut=(C.c_uint*2)();s=[C.c_void_p(),C.c_void_p()]
for x in s:n.nvmlGpmSampleAlloc(C.byref(x))
def t(name,f,k=20):
  v=[]
  for i in range(k):
    a=time.perf_counter();r=f();v.append((time.perf_counter()-a)*1e3)
  print("%-34s rc=%d median %.3f ms max %.3f"%(name,r,S.median(v),max(v)))
t("PowerUsage",lambda:n.nvmlDeviceGetPowerUsage(d,C.byref(u)))
t("TotalEnergyConsumption",lambda:n.nvmlDeviceGetTotalEnergyConsumption(d,C.byref(e)))
t("ClockInfo SM",lambda:n.nvmlDeviceGetClockInfo(d,1,C.byref(u)))
t("ClockInfo MEM",lambda:n.nvmlDeviceGetClockInfo(d,2,C.byref(u)))
t("UtilizationRates",lambda:n.nvmlDeviceGetUtilizationRates(d,ut))
t("PcieThroughput TX",lambda:n.nvmlDeviceGetPcieThroughput(d,0,C.byref(u)))
t("PcieThroughput RX",lambda:n.nvmlDeviceGetPcieThroughput(d,1,C.byref(u)))
t("EnforcedPowerLimit",lambda:n.nvmlDeviceGetEnforcedPowerLimit(d,C.byref(u)))
t("GpmSampleGet",lambda:n.nvmlGpmSampleGet(d,s[0]))
