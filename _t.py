from twin.twin import Twin
from twin.base_drive import BaseDrive
from twin.odometry import base_pose
tw=Twin(); d=BaseDrive(tw); d.command(0.4,0)
for i in range(30):
    tw.run_for(0.1); print(round(tw.time,2), tw.data.qvel[:3].round(3), base_pose(tw.model,tw.data)[0].__round__(3))
