"""What every lesson's lab bench is built from: the figure machinery and plot style (``figures``), the
controls and the ``Explorer`` (``widgets``), the readout beside a figure (``readouts``), the script that
makes the explorers accessible (``accessibility``) and the course map (``course_map``)."""
