// Update sites for the node catalog tests, built from REAL node descriptions of public
// vendor plug-ins (excerpts: long option texts shortened, structure kept as published). Each
// constant names the repository and path it comes from.
import zlib from 'node:zlib';
import { type BundleSpec, descriptionXml, type FeatureSpec, type NodeSpec } from '../../helpers/p2-fixtures.js';

/**
 * knime/knime-excel, org.knime.ext.poi3/src/org/knime/ext/poi3/node/io/filehandling/excel/writer/ExcelTableWriterNodeFactory.xml
 * (schema v4.1; a fixed input port and two dynamic port groups). `intro` is the first two paragraphs and the list.
 */
export const EXCEL_WRITER_XML = (introTail: string) => `<?xml version="1.0" encoding="utf-8"?>
<knimeNode icon="./excel_writer.png" type="Sink"
	 xmlns="http://knime.org/node/v4.1" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
	 xsi:schemaLocation="http://knime.org/node/v4.1 http://knime.org/node/v4.1.xsd">
    <name>Excel Writer</name>
    <shortDescription> Writes data tables to an Excel file.
    </shortDescription>
    <fullDescription>
        <intro>
            <p> This node writes the input data table into a spreadsheet of an Excel file. The files can then
                be read with other applications such as Microsoft Excel.
                <br/>
                Adding additional sheet input ports allows to write multiple spreadsheets to the same file. Furthermore,
                it is also possible to append sheets to an already existing excel file by selecting the <i>append</i>
                option.
            </p>
            <p>The node supports two formats chosen by file extension:
            <ul>
                <li>
                    .xls format: This is the file format which was used by default up until Excel 2003.
                </li>
                <li>
                    .xlsx format: The Office Open XML format is the file format used by default from Excel 2007 onwards.
                </li>
            </ul>
            </p>
	        <p>${introTail}</p>
        </intro>
		<option name="Create missing folders">Select if the folders of the selected output location should be
			created if they do not already exist. If this option is unchecked, the node will fail if a folder does
			not exist.
		</option>
		<option name="If exists">
			Specify the behavior of the node in case the output file already exists.
			<ul>
				<li><i>Overwrite:</i> Will replace any existing file.
				</li>
				<li><i>Append:</i> Will append the input tables to the existent Excel file's sheets.
				</li>
				<li><i>Fail:</i> Will issue an error during the node's execution (to prevent unintentional overwrite).
				</li>
			</ul>
		</option>
        <option name="Sheet name">
            Name of the spreadsheets that will be created. The dropdown can be used
            to select a sheet name which already exists in the Excel file or a custom
            name can be entered.
        </option>
        <option name="Write row key">
        	If checked, the row IDs are added to the output, in the first column of the spreadsheet.
        </option>
        <option name="Autosize columns">
        	Fits each column's width to its content.
        </option>
    </fullDescription>
    <ports>
        <inPort index="0" name="Input table"> The data table to write.</inPort>
        <dynInPort insert-before="0" name="File system connection" group-identifier="File System Connection">
            The file system connection.
        </dynInPort>
        <dynInPort insert-before="1" name="Additional input tables" group-identifier="Sheet Input Ports">
            Additional data table to write.
        </dynInPort>
    </ports>
</knimeNode>
`;

/**
 * knime/knime-excel, org.knime.ext.poi3/src/org/knime/ext/poi3/node/io/filehandling/excel/sheets/ExcelSheetReaderNodeFactory.xml
 * (v4.1; options inside a dialog tab, a dynamic input port group). Options shortened.
 */
export const SHEET_READER_XML = `<?xml version="1.0" encoding="utf-8"?>
<knimeNode type="Source" icon="./xlssheetreader.png" xmlns="http://knime.org/node/v4.1" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://knime.org/node/v4.1 http://knime.org/node/v4.1.xsd">
	<name>Read Excel Sheet Names (Labs)</name>
	<shortDescription>
		Reads the sheet names contained in a excel file.
	</shortDescription>
	<fullDescription>
		<intro>
			This node reads an excel file and provides the contained sheet names at its output port.<br />
			The performance of the reader node is limited (due to the underlying library
			of the Apache POI project). Reading large files takes a very long time and uses a
			lot of memory (especially files in xlsx format).
		</intro>
		<tab name="Settings">
			<option name="Mode">
				Select whether you want to read a single file or multiple files in a folder.
				When reading files in a folder, you can set filters to specify which
				files and subfolders to include (see below).
			</option>
			<option name="Include subfolders">
				If this option is checked, the node will include all files from subfolders that satisfy the specified filter options.
				If left unchecked, only the files in the selected folder will be included and all files from subfolders are ignored.
			</option>
		</tab>
	</fullDescription>
	<ports>
		<dynInPort insert-before="0" name="File system connection"
			group-identifier="File System Connection">
			The file system connection.
		</dynInPort>
		<outPort index="0" name="Output table">
			The sheet names contained in the workbook and the path to the workbook.
		</outPort>
	</ports>
</knimeNode>
`;

/**
 * knime/knime-base, org.knime.base/src/org/knime/base/node/viz/crosstable/CrosstabNodeFactory.xml
 * (DTD schema; two output ports and a view). The view text is shortened.
 */
export const CROSSTAB_XML = `<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE knimeNode PUBLIC "-//UNIKN//DTD KNIME Node 2.0//EN" "http://www.knime.org/Node.dtd">
<knimeNode type="Manipulator" icon="./crosstable.png">
	<name>Crosstab (local)</name>
	<shortDescription>Creates a cross-tabulation (also referred as
		contingency table or cross-tab).</shortDescription>
	<fullDescription>
		<intro>
			<p>Creates a cross table (also referred as
			     <a href="http://en.wikipedia.org/wiki/Contingency_table">
			     contingency table</a> or cross tab). It can be used to analyze
			    the relation of two columns with categorical data and does
			    display the frequency distribution of the categorical variables
			    in a table.</p>
		</intro>
		<option name="Row variable">
			The input column used as the row variable in the
			cross-tabulation.
		</option>
		<option name="Column variable">
			The input column used as the column variable in
			the cross-tabulation.
		</option>
	</fullDescription>
	<ports>
		<inPort index="0" name="Input Table">
			Input table containing columns with
			categorical data.
        </inPort>
		<outPort index="0" name="Cross-Table">
			The cross table in list form.
		</outPort>
		<outPort index="1" name="Statistics Table">
			The table with the statistics.
		</outPort>
	</ports>
	<views>
		<view name="Cross tabulation" index="0">
			The following properties are displayed in the cross tabulation view:
			<br />
			<i>Frequency:</i> The cell frequency.
		</view>
	</views>
</knimeNode>
`;

/**
 * cyface-de/knime-nodes, de.cyface.knime/src/main/java/de/cyface/knime/nodes/smoothing/SmoothingNodeFactory.xml
 * (DTD schema; licence comment header left out).
 */
export const SMOOTHING_XML = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE knimeNode PUBLIC "-//UNIKN//DTD KNIME Node 2.0//EN" "http://www.knime.org/Node.dtd">
<knimeNode icon="./icon.png" type="Manipulator">
    <name>Signal Smoothing</name>
    <shortDescription>
        Applies a smoothing algorithm to an input signal.
    </shortDescription>
    <fullDescription>
        <intro>
            <p>Takes a one dimensional input signal in the form of measurement values in a table column, applies a smoothing algorithm and returns the smoothed signal.</p>
            <ul>
                <li>Rectangular Smoothing: Replaces each value by the mean of its predecessors and successors. Keeps the first and the last value.</li>
                <li>Triangular Smoothing: Similar to the rectangular smoothing but applies weights.</li>
            </ul>
        </intro>
  		<option name="Filter Type">Choose the type of filter (smoothing algorithm) to use.</option>
    </fullDescription>
    <ports>
        <inPort index="0" name="Input Signal Table">A table with at least one double compatible column serving as the input signal.</inPort>
        <outPort index="0" name="Output with Smoothed Signal">The output table containing the smoothed signal either by replacing the input column or appended as a new column.</outPort>
    </ports>
</knimeNode>
`;

/** A `size`×`size` RGBA PNG checkerboard: any scaling or blurring of it shows. */
export function checkerPng(size: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(zlib.crc32(Buffer.concat([Buffer.from(type), data])));
    return Buffer.concat([len, Buffer.from(type), data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 6, 0, 0, 0], 8);
  const rows = Buffer.alloc(size * (1 + size * 4));
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const o = y * (1 + size * 4) + 1 + x * 4;
      rows.set((x + y) % 2 === 0 ? [16, 110, 60, 255] : [240, 240, 240, 255], o);
    }
  }
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', zlib.deflateSync(rows)), chunk('IEND', Buffer.alloc(0))]);
}

export const WRITER = 'org.knime.ext.poi3.node.io.filehandling.excel.writer.ExcelTableWriterNodeFactory';
export const OLD_WRITER = 'org.knime.ext.poi2.node.write3.XLSWriter2NodeFactory';
export const SHEETS = 'org.knime.ext.poi3.node.io.filehandling.excel.sheets.ExcelSheetReaderNodeFactory';
export const CROSSTAB = 'org.knime.base.node.viz.crosstable.CrosstabNodeFactory';
export const TAGGER = 'org.knime.ext.poi3.node.tag.SheetTaggerNodeFactory';
export const SMOOTHING = 'de.cyface.knime.nodes.smoothing.SmoothingNodeFactory';

const pkg = (fc: string) => fc.slice(0, fc.lastIndexOf('.')).replace(/\./g, '/');
const simple = (fc: string) => fc.slice(fc.lastIndexOf('.') + 1);
const raw = (factoryClass: string, categoryPath: string, xml: string, extra: Partial<NodeSpec> = {}): NodeSpec => ({
  factoryClass,
  categoryPath,
  name: '',
  shortDescription: '',
  schema: 'v4.1',
  rawDescription: xml,
  ...extra,
});

/** The Excel extension's bundles for one label: `label` decides what differs between labels. */
export function excelBundles(label: '5.2' | '5.3', version: string): BundleSpec[] {
  // The writer's description changed in 5.3 (one sentence added to its intro).
  const writerXml = EXCEL_WRITER_XML(label === '5.2' ? 'This node does not support writing files in the xlsm format.' : 'This node does not support writing files in the xlsm format, yet appending is supported.');
  const nodes: NodeSpec[] = [
    raw(WRITER, '/io/excel', writerXml),
    raw(SHEETS, '/io/excel', SHEET_READER_XML),
    raw(CROSSTAB, '/analytics', CROSSTAB_XML),
    // The superseded writer: the same real description under the name the platform gives a
    // deprecated node, declared deprecated in plugin.xml.
    raw(OLD_WRITER, '/io/excel', writerXml.replace('<name>Excel Writer</name>', '<name>Excel Writer (deprecated)</name>'), { deprecated: true }),
  ];
  // A node only 5.3 has, with keywords (the generated v4.1 description carries them).
  if (label === '5.3') nodes.push({ factoryClass: TAGGER, categoryPath: '/io/excel', name: 'Sheet Tagger', shortDescription: 'Tags sheets.', schema: 'v4.1' });
  // The icons the descriptions name (`icon="./excel_writer.png"`), at their real sizes: 16 px
  // artwork, and one 32 px icon (drawn at its own size too).
  const icons: Record<string, Uint8Array> = {
    [`${pkg(WRITER)}/excel_writer.png`]: checkerPng(16),
    [`${pkg(OLD_WRITER)}/excel_writer.png`]: checkerPng(16),
    [`${pkg(SHEETS)}/xlssheetreader.png`]: checkerPng(32),
    [`${pkg(CROSSTAB)}/crosstable.png`]: checkerPng(16),
    [`${pkg(TAGGER)}/${simple(TAGGER)}.png`]: checkerPng(16),
  };
  return [
    {
      id: 'org.knime.ext.poi3',
      version,
      categories: [
        { path: '/', levelId: 'io', name: 'IO' },
        { path: '/io', levelId: 'excel', name: 'Excel' },
        { path: '/', levelId: 'analytics', name: 'Analytics' },
      ],
      nodes,
      extraEntries: icons,
    },
  ];
}

export function excelFeatures(version: string): FeatureSpec[] {
  return [
    {
      id: 'org.knime.features.ext.poi',
      version,
      label: 'KNIME Excel Support',
      provider: 'KNIME AG, Zurich, Switzerland',
      description: 'Excel reader and writer nodes.',
      license: 'GPL-3.0',
      copyright: 'KNIME AG',
      bundles: ['org.knime.ext.poi3'],
    },
  ];
}

export function signalBundles(version: string): BundleSpec[] {
  return [
    {
      id: 'de.cyface.knime',
      version,
      categories: [{ path: '/community', levelId: 'cyface', name: 'Cyface' }],
      nodes: [raw(SMOOTHING, '/community/cyface', SMOOTHING_XML)],
    },
  ];
}

/** The generated description a node without raw XML gets (for the keywords it carries). */
export const generatedDescription = descriptionXml;
